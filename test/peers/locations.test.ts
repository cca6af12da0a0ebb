/**
 * Locations (plugins/peers/locations.ts): liveness on the receiver's clock, late notices, installers'
 * first announcement times.
 */
import assert from 'node:assert/strict';
import { Locations } from '../../plugins/peers/locations.ts';

const TTL = 45_000;

describe('peers: locations', function () {
  it('a node is live while heard within the TTL, on the receiver clock, even when its own clock runs 20 s behind', () => {
    let now = 1_000_000;
    const l = new Locations(() => now, TTL);
    l.apply('apprunning', { ip: '10.0.0.2:16127', apps: [{ name: 'web', hash: 'h', runningSince: 1 }] }, 'k2', now - 20_000);
    now += 40_000;
    assert.equal(l.locations('web').length, 1);
    assert.equal(l.heard().get('web')?.running[0].node, 'k2');
    now += 10_000;
    assert.equal(l.locations('web').length, 0, 'gone 45 s after it was heard');
  });

  it('a notice delivered late (a catch-up after a partition) does not bring a dead node back', () => {
    let now = 1_000_000;
    const l = new Locations(() => now, TTL);
    l.apply('apprunning', { ip: '10.0.0.3:16127', apps: [{ name: 'web', hash: 'h', runningSince: 1 }] }, 'dead', now - 120_000);
    assert.equal(l.locations('web').length, 0);
    // 50 s late: counts as heard at its send time + TTL, so gone 40 s from now, not 45 s.
    l.apply('apprunning', { ip: '10.0.0.3:16127', apps: [{ name: 'web', hash: 'h', runningSince: 1 }] }, 'late', now - 50_000);
    now += 39_000;
    assert.equal(l.locations('web').length, 1);
    now += 2000;
    assert.equal(l.locations('web').length, 0, 'counted from its send time');
  });

  it('installing: the first announcement time is kept by re-announcements and by a notice without one', () => {
    let now = 1_000_000;
    const l = new Locations(() => now, TTL);
    l.apply('appinstalling', { ip: '10.0.0.4:16127', name: 'web', announcedAt: now - 1000 }, 'k4', now);
    now += 15_000;
    l.apply('appinstalling', { ip: '10.0.0.4:16127', name: 'web', announcedAt: now - 16_000 }, 'k4', now);
    l.apply('appinstalling', { ip: '10.0.0.4:16127', name: 'web' }, 'k4', now);
    const i = l.heard().get('web')!.installing;
    assert.equal(i.length, 1);
    assert.equal(i[0].announcedAt, 1_000_000 - 1000);
    l.apply('appremoved', { ip: '10.0.0.4:16127', name: 'web' }, 'k4', now);
    assert.equal(l.heard().get('web'), undefined, 'a stand-down drops it');
  });
});
