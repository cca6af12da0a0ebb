/**
 * `npm run login`: asks a phrase, signs, logs in, prints a header that curl (here: fetch) can use. The first
 * test runs the npm script as an operator types it; the others its compiled entry point, what the script
 * runs (npm's own start is half a second of CPU).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Wallet } from 'ethers';
import { REPO_ROOT } from '../../core/config.ts';
import type { TestNode } from '../support/node.ts';
import { startIdentityNode } from './node.ts';

const run = promisify(execFile);
const cli = path.join(REPO_ROOT, 'dist', 'plugins', 'identity', 'login-cli.js');
const login = (args: string[]) => run(process.execPath, [cli, ...args]);
const WIF = 'KyL927pfsyZnJhFq5gQGy5eWq9tRYuAppRGiLjvBJGMvMwCqWYmv'; // signature-vectors.md: 1PQWN5vgV3P9KexYmhF133zDft34YhKB3L

const headerIn = (stdout: string) => stdout.split('\n').find((l) => l.startsWith('legacyid='))!;

describe('identity: npm run login', function () {
  this.timeout(60_000);
  let node: TestNode;
  before(async () => {
    node = await startIdentityNode({ config: { initial: { legacyid: '1PQWN5vgV3P9KexYmhF133zDft34YhKB3L' } } });
  });
  after(() => node.close());

  it('--wif: logs in and prints a URL-encoded legacyidauth header that authenticates', async () => {
    const { stdout } = await run('npm', ['run', '--silent', 'login', '--', '--wif', WIF, '--node', node.url], { cwd: REPO_ROOT });
    assert.match(stdout, /as 1PQWN5vgV3P9KexYmhF133zDft34YhKB3L \(admin\)/);
    const header = headerIn(stdout);
    assert.ok(!/signature=[^&]*[+/=]/.test(header), 'the signature is URL-encoded');
    const me = await node.get('/id/loggedsessions', { legacyidauth: header });
    assert.equal(me.json.data[0].legacyid, '1PQWN5vgV3P9KexYmhF133zDft34YhKB3L');
    assert.match(stdout, /curl -s -H 'legacyidauth: /);
  });

  it('--eth-key (read from stdin with -): logs in the ethereum address', async () => {
    const w = Wallet.createRandom();
    const child = login(['--eth-key', '-', '--node', node.url]);
    child.child.stdin!.end(w.privateKey + '\n');
    const { stdout } = await child;
    const header = headerIn(stdout);
    assert.equal(new URLSearchParams(header).get('legacyid'), w.address);
    assert.equal((await node.post('/id/checkprivilege', {}, { legacyidauth: header })).json.data.privilege, 'user');
  });

  it('says what is wrong: a bad key, an unreachable node, no key', async () => {
    const fail = async (args: string[]) => {
      try {
        await login(args);
      } catch (e) {
        return (e as { stderr: string }).stderr;
      }
      throw new Error('expected a failure');
    };
    assert.match(await fail(['--wif', WIF.slice(0, -1) + 'w', '--node', node.url]), /bad checksum/);
    assert.match(await fail(['--eth-key', 'abc', '--node', node.url]), /64 hex digits/);
    assert.match(await fail(['--wif', WIF, '--node', 'http://127.0.0.1:1']), /cannot reach/);
    assert.match(await fail([]), /usage: npm run login/);
  });
});
