/**
 * The host's one app name per request (core/http/app-name.ts): the same name in every place that gives
 * one, a string, taken from the places the handler reads; else a 400 that names the field and the places.
 */
import assert from 'node:assert/strict';
import { decideAppName, namesApp } from '../../core/http/app-name.ts';
import { validationRefusal } from '../support/refusal.ts';

const refusal = validationRefusal;

describe('the app a request acts on (one name, decided by the host)', () => {
  it('is the one name every place gives', () => {
    assert.equal(decideAppName('appname', { path: { appname: 'a' }, query: {}, body: undefined }), 'a');
    assert.equal(decideAppName('appname', { path: {}, query: { appname: 'a' }, body: { appname: 'a' } }), 'a');
    assert.equal(decideAppName('name', { path: {}, query: {}, body: { name: 'a', appname: 'b' } }), 'a');
    // Empty and null count as not given, as in the merged input.
    assert.equal(decideAppName('appname', { path: { appname: '' }, query: { appname: 'a' }, body: { appname: null } }), 'a');
    assert.equal(decideAppName('appname', { path: {}, query: {}, body: 'text' }), undefined);
  });

  it('refuses two different names, naming the field and the places', () => {
    assert.equal(
      refusal(() => decideAppName('appname', { path: {}, query: { appname: 'mine' }, body: { appname: 'victim' } })),
      'appname is given in the query and the body with different values: name the application once, or the same in every place',
    );
    assert.match(refusal(() => decideAppName('appname', { path: { appname: 'x' }, query: { appname: 'x' }, body: { appname: 'y' } })), /^appname is given in the path and the query and the body/);
    // A component_app name is another name than the app's own.
    assert.match(refusal(() => decideAppName('appname', { path: { appname: 'web_a' }, query: { appname: 'a' }, body: undefined })), /path and the query/);
  });

  it('refuses a name that is not a string', () => {
    assert.equal(refusal(() => decideAppName('appname', { path: {}, query: {}, body: { appname: ['victim'] } })), 'Invalid body input: appname must be a string');
    assert.equal(refusal(() => decideAppName('appname', { path: {}, query: {}, body: { appname: { $ne: 'x' } } })), 'Invalid body input: appname must be a string');
  });

  it('gives the level check only a name the handler reads, and never an inherited key', () => {
    assert.equal(decideAppName('appname', { path: {}, query: { appname: 'a' }, body: undefined }, ['path']), undefined);
    assert.equal(decideAppName('appname', { path: { appname: 'a' }, query: {}, body: undefined }, ['body', 'path']), 'a');
    assert.equal(decideAppName('constructor', { path: {}, query: {}, body: {} }), undefined);
  });

  it('applies to the levels that depend on an app', () => {
    assert.deepEqual(
      (['public', 'user', 'appowner', 'coreteam', 'admin', 'adminandcoreteam', 'appownerabove'] as const).filter(namesApp),
      ['appowner', 'appownerabove'],
    );
  });
});
