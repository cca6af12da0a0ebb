/**
 * Permission levels, enforced by the host before any handler runs. Sessions come from the fixture plugin's
 * test-double resolver (the identity plugin provides the real one).
 */
import assert from 'node:assert/strict';
import type { TestNode } from '../support/node.ts';
import { APP_OWNER, CORE_TEAM, OPERATOR, USER, sessionFor, startCoreNode, startFixtureNode } from '../support/fixture.ts';

const LEVEL_ROUTES = {
  user: '/fixture/level/user',
  admin: '/fixture/level/admin',
  coreteam: '/fixture/level/coreteam',
  adminandcoreteam: '/fixture/level/adminandcoreteam',
  appowner: '/fixture/level/appowner/fixtureapp',
  appownerabove: '/fixture/level/appownerabove/fixtureapp',
} as const;
type LevelName = keyof typeof LEVEL_ROUTES;

/** Who passes which level (spec: Authentication, levels are OR of identity sets). */
const MATRIX: Record<string, { headers: Record<string, string>; passes: LevelName[] }> = {
  anonymous: { headers: {}, passes: [] },
  'bad signature': { headers: { legacyidauth: `legacyid=${OPERATOR}&signature=forged&loginPhrase=x` }, passes: [] },
  'not URL-encoded header': { headers: { legacyidauth: `{"legacyid":"${OPERATOR}"}` }, passes: [] },
  user: { headers: sessionFor(USER), passes: ['user'] },
  operator: { headers: sessionFor(OPERATOR), passes: ['user', 'admin', 'adminandcoreteam'] },
  'core team': { headers: sessionFor(CORE_TEAM), passes: ['user', 'coreteam', 'adminandcoreteam', 'appownerabove'] },
  'app owner': { headers: sessionFor(APP_OWNER), passes: ['user', 'appowner', 'appownerabove'] },
};

describe('permission levels', () => {
  let node: TestNode;
  const reached: { route: string; caller?: string }[] = [];
  before(async () => {
    node = await startFixtureNode({ onHandler: (route, caller) => reached.push({ route, caller: caller.legacyid }) });
  });
  after(() => node.close());

  for (const [who, { headers, passes }] of Object.entries(MATRIX)) {
    it(`${who}: passes ${passes.join(', ') || 'no level but public'}; every other level answers body code 401`, async () => {
      for (const [level, path] of Object.entries(LEVEL_ROUTES) as [LevelName, string][]) {
        reached.length = 0;
        const res = await node.get(path, headers);
        assert.equal(res.status, 200, `${who} ${level}`);
        if (passes.includes(level)) {
          assert.equal(res.json.status, 'success', `${who} should pass ${level}: ${res.text}`);
          assert.equal(res.json.data.authenticated, true);
          assert.equal(reached.length, 1);
        } else {
          assert.deepEqual(res.json, { status: 'error', data: { code: 401, name: 'Unauthorized', message: 'Unauthorized. Access denied.' } }, `${who} ${level}`);
          assert.equal(reached.length, 0, `${who} must not reach the ${level} handler`);
        }
      }
    });
  }

  it('names the caller with its privilege label (core team before operator)', async () => {
    const me = (await node.get(LEVEL_ROUTES.user, sessionFor(OPERATOR))).json.data;
    assert.deepEqual(me, { legacyid: OPERATOR, loginPhrase: me.loginPhrase, authenticated: true, isAdmin: true, isCoreTeam: false, privilege: 'admin' });
    assert.equal((await node.get(LEVEL_ROUTES.user, sessionFor(CORE_TEAM))).json.data.privilege, 'coreteam');
    assert.equal((await node.get(LEVEL_ROUTES.user, sessionFor(USER))).json.data.privilege, 'user');
  });

  it('app levels authorise against the named application only', async () => {
    const other = await node.get('/fixture/level/appowner/otherapp', sessionFor(APP_OWNER));
    assert.equal(other.json.data.code, 401);
    const component = await node.get('/fixture/level/appowner/web_fixtureapp', sessionFor(APP_OWNER));
    assert.equal(component.json.status, 'success', 'component_app names authorise against the app');
  });

  it('public routes pass without a header, and an unknown session stays anonymous', async () => {
    assert.equal((await node.get('/fixture/echo')).json.data.caller, null);
    assert.equal((await node.get('/fixture/echo', sessionFor(USER))).json.data.caller, USER);
    assert.equal((await node.get('/fixture/echo', { legacyidauth: 'legacyid=x&signature=bad&loginPhrase=y' })).json.data.caller, null);
  });
});

describe('permission levels without an identity plugin', () => {
  it('refuses every non-public route with body code 401 (no session resolver)', async () => {
    const node = await startCoreNode({ config: { initial: { legacyid: OPERATOR } } });
    try {
      const res = await node.get('/apps/operations/abc', sessionFor(OPERATOR));
      assert.equal(res.status, 200);
      assert.equal(res.json.data.code, 401);
    } finally {
      await node.close();
    }
  });
});
