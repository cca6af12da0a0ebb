/**
 * The node software as a git checkout, against a local git remote (a bare repository the test makes): the
 * update routes reset or fast-forward the checkout, install dependencies with npm (a package without
 * dependencies: no network), and restart the node through the configured command; the branch switches;
 * the front-end rebuild; and the node's graceful restart.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CORE_TEAM, MEMBER, asOperator, authAs, err, ok, startOpsNode, tmp, waitFor } from './support.ts';

const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.invalid', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.invalid' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: 'pipe' }).trim();

describe('node software updates (local git remote)', function () {
  this.timeout(180_000);
  let root: string;
  let remote: string;
  let work: string; // the vendor's working copy that pushes new versions
  let checkout: string; // the node's own checkout
  let restarts: string;
  let node: Awaited<ReturnType<typeof startOpsNode>>;

  function commit(file: string, text: string, branch = 'master') {
    git(work, 'checkout', '-q', branch);
    fs.writeFileSync(path.join(work, file), text);
    git(work, 'add', '-A');
    git(work, 'commit', '-qm', `change ${file}`);
    git(work, 'push', '-q', 'origin', branch);
    return git(work, 'rev-parse', 'HEAD');
  }
  const restartCount = () => (fs.existsSync(restarts) ? fs.readFileSync(restarts, 'utf8').split('\n').filter(Boolean).length : 0);

  before(async () => {
    root = tmp('git');
    remote = path.join(root, 'remote.git');
    work = path.join(root, 'work');
    checkout = path.join(root, 'node');
    restarts = path.join(root, 'restarts');
    git(root, 'init', '-q', '--bare', '-b', 'master', remote);
    git(root, 'clone', '-q', remote, work);
    git(work, 'checkout', '-q', '-b', 'master');
    // One dependency from the repository itself (file:), so npm installs without the network.
    fs.mkdirSync(path.join(work, 'local-dep'));
    fs.writeFileSync(path.join(work, 'local-dep', 'package.json'), JSON.stringify({ name: 'local-dep', version: '1.0.0' }));
    fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ name: 'node-software-double', version: '1.0.0', private: true, dependencies: { 'local-dep': 'file:./local-dep' } }, null, 2));
    fs.writeFileSync(path.join(work, '.gitignore'), 'node_modules/\n');
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent'], { cwd: work });
    fs.writeFileSync(path.join(work, 'VERSION'), '1\n');
    git(work, 'add', '-A');
    git(work, 'commit', '-qm', 'first');
    git(work, 'push', '-q', 'origin', 'master');
    git(work, 'checkout', '-q', '-b', 'development');
    fs.writeFileSync(path.join(work, 'DEV'), 'dev\n');
    git(work, 'add', '-A');
    git(work, 'commit', '-qm', 'development work');
    git(work, 'push', '-q', 'origin', 'development');
    git(root, 'clone', '-q', '-b', 'master', remote, checkout);
    node = await startOpsNode({
      node: { softwareDir: checkout, restartCommand: ['sh', '-c', `echo restart >> ${restarts}`], npm: { command: ['npm'], installArgs: ['ci', '--no-audit', '--no-fund', '--offline'] } },
    });
  });
  after(async () => {
    await node?.close();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('updatecore: resets the checkout to the remote head (local edits and commits dropped), then restarts', async () => {
    const head = commit('VERSION', '2\n');
    fs.writeFileSync(path.join(checkout, 'VERSION'), 'local edit\n');
    fs.writeFileSync(path.join(checkout, '.git', 'index.lock'), ''); // left behind by a crashed git
    const data = ok(await node.get('/core/updatecore', authAs(CORE_TEAM)));
    assert.match(data.message, new RegExp(`^Core updated to master ${head.slice(0, 7)}; restarting CoreOS$`));
    assert.equal(git(checkout, 'rev-parse', 'HEAD'), head);
    assert.equal(fs.readFileSync(path.join(checkout, 'VERSION'), 'utf8'), '2\n');
    await waitFor(() => restartCount() === 1, 10_000, 'the restart command');
  });

  it('softupdatecore: drops local edits and fast-forwards; softupdatecoreinstall also installs', async () => {
    const head = commit('VERSION', '3\n');
    fs.writeFileSync(path.join(checkout, 'VERSION'), 'local edit\n');
    ok(await node.get('/core/softupdatecore', asOperator()));
    assert.equal(git(checkout, 'rev-parse', 'HEAD'), head);
    assert.equal(fs.readFileSync(path.join(checkout, 'VERSION'), 'utf8'), '3\n');
    const next = commit('VERSION', '4\n');
    assert.match(ok(await node.get('/core/softupdatecoreinstall', asOperator())).message, /and its dependencies installed/);
    assert.equal(git(checkout, 'rev-parse', 'HEAD'), next);
    assert.ok(fs.existsSync(path.join(checkout, 'node_modules', '.package-lock.json')), 'npm ci ran in the checkout');
    await waitFor(() => restartCount() === 3, 10_000, 'two more restarts');
  });

  it('hardupdatecore: removes the dependencies, resets, reinstalls', async () => {
    fs.writeFileSync(path.join(checkout, 'node_modules', 'stale'), 'x');
    const head = commit('VERSION', '5\n');
    ok(await node.get('/core/hardupdatecore', asOperator()));
    assert.equal(git(checkout, 'rev-parse', 'HEAD'), head);
    assert.ok(!fs.existsSync(path.join(checkout, 'node_modules', 'stale')));
    assert.ok(fs.existsSync(path.join(checkout, 'node_modules', '.package-lock.json')));
  });

  it('enterdevelopment and entermaster switch the branch at the remote head (Admin only)', async () => {
    assert.equal(err(await node.get('/core/enterdevelopment', authAs(CORE_TEAM))).code, 401);
    assert.match(ok(await node.get('/core/enterdevelopment', asOperator())).message, /^Switched to the development branch/);
    assert.equal(git(checkout, 'rev-parse', '--abbrev-ref', 'HEAD'), 'development');
    assert.ok(fs.existsSync(path.join(checkout, 'DEV')));
    ok(await node.get('/core/entermaster', asOperator()));
    assert.equal(git(checkout, 'rev-parse', '--abbrev-ref', 'HEAD'), 'master');
    assert.ok(!fs.existsSync(path.join(checkout, 'DEV')));
  });

  it('a fast-forward that cannot happen is a clear error and changes nothing', async () => {
    fs.writeFileSync(path.join(checkout, 'LOCAL'), 'x');
    git(checkout, 'add', '-A');
    execFileSync('git', ['commit', '-qm', 'local commit'], { cwd: checkout, env: GIT_ENV });
    const local = git(checkout, 'rev-parse', 'HEAD');
    commit('VERSION', '6\n');
    const e = err(await node.get('/core/softupdatecore', asOperator()));
    assert.deepEqual([e.code, e.name], [500, 'CommandFailed']);
    assert.match(e.message, /^git pull --ff-only exited with code/);
    assert.equal(git(checkout, 'rev-parse', 'HEAD'), local);
  });

  it('refuses the update routes to users and anonymous callers', async () => {
    for (const p of ['/core/updatecore', '/core/softupdatecore', '/core/softupdatecoreinstall', '/core/hardupdatecore', '/core/rebuildui', '/core/restart'])
      for (const who of [undefined, authAs(MEMBER)]) assert.equal(err(await node.get(p, who)).code, 401, p);
  });
});

describe('node software: not a checkout, the front end, the restart', function () {
  this.timeout(60_000);
  it('says when the software folder is not a git checkout', async () => {
    const node = await startOpsNode();
    try {
      const e = err(await node.get('/core/updatecore', asOperator()));
      assert.deepEqual([e.code, e.name], [500, 'NotACheckout']);
    } finally {
      await node.close();
    }
  });

  it('rebuilds the front end when there is one, and says so when there is not', async () => {
    const ui = tmp('ui');
    try {
      const node = await startOpsNode({ node: { ui: { dir: ui, buildCommand: ['npm', 'run', 'build', '--silent'] } } });
      try {
        assert.deepEqual([err(await node.get('/core/rebuildui', asOperator())).name], ['NoFrontEnd']);
        fs.writeFileSync(path.join(ui, 'package.json'), JSON.stringify({ name: 'ui', private: true, scripts: { build: 'node -e "require(\'fs\').writeFileSync(\'dist.txt\', \'built\')"' } }));
        assert.deepEqual(ok(await node.get('/core/rebuildui', authAs(CORE_TEAM))), { message: 'Front end rebuilt' });
        assert.equal(fs.readFileSync(path.join(ui, 'dist.txt'), 'utf8'), 'built');
      } finally {
        await node.close();
      }
    } finally {
      fs.rmSync(ui, { recursive: true, force: true });
    }
  });

  it('restart answers Restarting CoreOS and runs the configured restart (AdminAndCoreTeam)', async () => {
    const dir = tmp('restart');
    const mark = path.join(dir, 'restarted');
    const node = await startOpsNode({ node: { restartCommand: ['touch', mark] } });
    try {
      assert.equal(ok(await node.get('/core/restart', authAs(CORE_TEAM))), 'Restarting CoreOS');
      await waitFor(() => fs.existsSync(mark), 10_000, 'the restart command');
    } finally {
      await node.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
