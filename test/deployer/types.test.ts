/**
 * Project types beyond node, python and static. Go, Rust and Ruby build for real (Debian's toolchains,
 * scripts/setup/ensure-toolchains.sh; tiny projects with nothing to download); Bun, Java, PHP and .NET by
 * their detection and default commands (their toolchains are not in Debian's packages here). Also
 * PROJECT_PATH (monorepos), pre/post-deploy hooks with SKIP_HOOKS and HOOK_TIMEOUT, SKIP_HEALTH_CHECK and
 * POLLING_INTERVAL.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { detectType, plan } from '../../plugins/deployer/project.ts';
import { Repo, appSays, buildPids, freePort, githubPush, nodeApp, settled, startDeployer, tempDir, testEnv, waitFor, type TestDeployer } from './support.ts';

const GO = {
  'go.mod': 'module example.com/tools/hello-go\n\ngo 1.19\n',
  // Plain net, not net/http: a cold build cache compiles far fewer packages (net/http took 95 s here).
  'main.go': `package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		panic(err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		buf := make([]byte, 1024)
		c.Read(buf)
		body := "go " + os.Getenv("GIT_COMMIT")
		fmt.Fprintf(c, "HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n%s", len(body), body)
		c.Close()
	}
}
`,
};

const RUST = {
  'Cargo.toml': '[package]\nname = "hello-rust"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
  'src/main.rs': `use std::io::{Read, Write};
use std::net::TcpListener;

fn main() {
    let port = std::env::var("PORT").unwrap();
    let commit = std::env::var("GIT_COMMIT").unwrap_or_default();
    let listener = TcpListener::bind(format!("127.0.0.1:{}", port)).unwrap();
    for stream in listener.incoming() {
        let mut s = match stream { Ok(s) => s, Err(_) => continue };
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf);
        let body = format!("rust {}", commit);
        let _ = write!(s, "HTTP/1.1 200 OK\\r\\nContent-Length: {}\\r\\nConnection: close\\r\\n\\r\\n{}", body.len(), body);
    }
}
`,
};

const RUBY = {
  Gemfile: "source 'https://rubygems.org'\n",
  'app.rb': `require 'socket'
server = TCPServer.new('127.0.0.1', Integer(ENV.fetch('PORT')))
loop do
  client = server.accept
  client.readpartial(1024) rescue nil
  body = "ruby #{ENV['GIT_COMMIT']}"
  client.write("HTTP/1.1 200 OK\\r\\nContent-Length: #{body.bytesize}\\r\\nConnection: close\\r\\n\\r\\n#{body}")
  client.close
end
`,
};

const GOCACHE = '/tmp/deployer-gocache';

const text = async (port: number) => {
  const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
  return res ? res.text() : null;
};

describe('deployer project types, hooks and options', function () {
  this.timeout(180_000);
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });
  const deployer = async (repo: Repo, extra: Record<string, string> = {}): Promise<TestDeployer> => {
    // A 20 s health window (10 × 2 s), not the default 3 s: \`bundle exec ruby\` takes 0.45 s to answer on an
    // idle machine here and took more than 3 s in CI's loaded run (health_check_failed, rolled back). No
    // test in this file waits for a failing check, and a probe that answers ends the wait at once.
    const d = await startDeployer(
      testEnv(repo, await freePort(), tempDir(), { DEBOUNCE_DELAY: '0', DEPLOYMENT_TIMEOUT: '170', HEALTH_CHECK_DELAY: '2', ...extra }),
    );
    cleanup.push(() => repo.remove(), () => d.close());
    return d;
  };

  it('go, rust and ruby: detected, built with their default commands and served', async () => {
    const repo = new Repo();
    const d = await deployer(repo);
    // One Go build cache for every run of this test (the app's HOME is new per deploy root): owned by the
    // build user, it turns the standard library's compile into a cache hit after the first run.
    if (process.getuid?.() === 0) {
      const [uid, gid] = execFileSync('getent', ['passwd', 'corenode-app'], { encoding: 'utf8' }).split(':').slice(2, 4).map(Number);
      fs.mkdirSync(GOCACHE, { recursive: true });
      fs.chownSync(GOCACHE, uid, gid);
      process.env.GOCACHE = GOCACHE;
      cleanup.push(() => delete process.env.GOCACHE);
    }
    for (const [type, files, expect] of [
      ['go', GO, /"project_type": "go"[\s\S]*\$ go build -trimpath -ldflags -w -s -o hello-go \./],
      ['rust', RUST, /"project_type": "rust"[\s\S]*\$ cargo build --release/],
      ['ruby', RUBY, /"project_type": "ruby"[\s\S]*\$ bundle install/],
    ] as const) {
      const old = fs.readdirSync(repo.dir).filter((f) => f !== '.git');
      const c = repo.commit({ ...Object.fromEntries(old.map((f) => [f, null])), ...files }, type);
      await d.github('push', githubPush(repo, c));
      const s = await waitFor(async () => {
        const st = (await d.get('/status')).json;
        return st.status === 'idle' && !st.queue.pending && !st.queue.debouncing ? st : null;
      }, `the ${type} deployment`, 170_000);
      assert.equal(s.releases[0]?.commit, c, `${type}: ${JSON.stringify(s.last_failed_deployment)} ${(await d.get(`/logs/${c}?format=json`)).json?.content?.slice(-1500)}`);
      assert.equal(await text(d.appPort), `${type} ${c}`);
      assert.match((await d.get(`/logs/${c}`)).text, expect);
    }
  });

  it('bun, java, php and dotnet: detected by their markers, with the default commands', () => {
    const dir = tempDir('deployer-types-');
    cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const project = (files: Record<string, string>) => {
      fs.rmSync(dir, { recursive: true, force: true });
      for (const [f, c] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
        fs.writeFileSync(path.join(dir, f), c);
      }
      return plan(dir, { projectType: 'auto', installCommand: '', buildCommand: '', runCommand: '' });
    };
    const cmd = (c: any) => (c ? ('argv' in c ? c.argv.join(' ') : c.shell) : null);
    const bun = project({ 'bun.lockb': '', 'package.json': JSON.stringify({ scripts: { build: 'x', start: 'y' } }) });
    assert.deepEqual([bun.projectType, cmd(bun.install), cmd(bun.build), cmd(bun.run)], ['bun', 'bun install --frozen-lockfile', 'bun run build', 'bun run start']);
    const bunEntry = project({ 'bunfig.toml': '', 'index.ts': '' });
    assert.deepEqual([bunEntry.projectType, cmd(bunEntry.install), cmd(bunEntry.run)], ['bun', 'bun install', 'bun index.ts']);

    const maven = project({ 'pom.xml': '<project/>' });
    assert.deepEqual([maven.projectType, cmd(maven.install), cmd(maven.build), maven.run], ['java', 'mvn dependency:go-offline -B', 'mvn clean package -DskipTests -B', null]);
    const gradle = project({ 'build.gradle.kts': '', gradlew: '' });
    assert.deepEqual([cmd(gradle.install), cmd(gradle.build)], ['./gradlew dependencies --no-daemon', './gradlew build -x test --no-daemon']);
    // The jar is picked after the build: -boot/-runner/-exec/-all preferred, sources/javadoc/tests/plain never.
    fs.mkdirSync(path.join(dir, 'build/libs'), { recursive: true });
    for (const j of ['app-plain.jar', 'app-sources.jar', 'app.jar', 'app-all.jar']) fs.writeFileSync(path.join(dir, 'build/libs', j), '');
    const { lateRun } = require_project();
    assert.equal(cmd(lateRun(dir, 8080, 'java', '/x')), `exec java $JAVA_OPTS -jar 'build/libs/app-all.jar' --server.port="$PORT"`);

    const php = project({ 'composer.json': '{}', 'public/index.php': '' });
    assert.deepEqual([php.projectType, cmd(php.install), php.build, cmd(php.run)], ['php', 'composer install --no-dev --optimize-autoloader --no-interaction', null, 'exec php -S 0.0.0.0:"$PORT" -t public']);
    const laravel = project({ 'composer.json': '{}', artisan: '' });
    assert.equal(cmd(laravel.run), 'exec php artisan serve --host=0.0.0.0 --port="$PORT"');

    const dotnet = project({ 'Api.csproj': '<Project Sdk="Microsoft.NET.Sdk.Web"></Project>', 'packages.lock.json': '{}' });
    assert.deepEqual([dotnet.projectType, cmd(dotnet.install), cmd(dotnet.build), cmd(dotnet.run)], ['dotnet', 'dotnet restore Api.csproj --locked-mode', 'dotnet publish Api.csproj -c Release -o publish', 'dotnet publish/Api.dll']);
    const worker = project({ 'Worker.fsproj': '<Project Sdk="Microsoft.NET.Sdk"><PropertyGroup><AssemblyName>svc</AssemblyName></PropertyGroup></Project>' });
    assert.deepEqual([cmd(worker.build), cmd(worker.run)], ['dotnet build Worker.fsproj -c Release -o publish', 'dotnet publish/svc.dll']);

    // Priorities and the other detections.
    const both = project({ 'bun.lock': '', 'package.json': '{}', 'index.js': '' });
    assert.equal(both.projectType, 'bun');
    assert.equal(detectType(dir), 'bun');
    assert.equal(project({ 'Cargo.toml': '[package]\nname = "x"\n', 'go.mod': 'module a/b\n' }).projectType, 'rust');
    assert.equal(project({ Gemfile: '', 'config.ru': '' }).run && cmd(project({ Gemfile: '', 'config.ru': '' }).run), 'exec bundle exec rackup -o 0.0.0.0 -p "$PORT"');
    // Operator commands win.
    const custom = plan(dir, { projectType: 'go', installCommand: 'true', buildCommand: 'make', runCommand: './server' });
    assert.deepEqual([cmd(custom.install), cmd(custom.build), cmd(custom.run)], ['true', 'make', './server']);
  });

  it('PROJECT_PATH deploys the app of a monorepo folder; hooks run around the build (pre-deploy failure keeps the old release)', async () => {
    const repo = new Repo();
    const web = (v: string, files: Record<string, string | null> = {}) => ({
      ...Object.fromEntries(Object.entries(nodeApp(v)).map(([f, c]) => [`apps/web/${f}`, c])),
      'README.md': 'monorepo',
      ...files,
    });
    const a = repo.commit(web('a', { 'apps/web/post-deploy.sh': '#!/bin/sh\necho "post $DEPLOY_RELEASE" > post.txt\nexit 3\n' }));
    const d = await deployer(repo, { PROJECT_PATH: 'apps/web', HOOK_TIMEOUT: '2' });
    await d.github('push', githubPush(repo, a));
    let s = await settled(d);
    assert.equal(s.current_release, `001-${a}`, JSON.stringify(s.last_failed_deployment));
    assert.equal((await appSays(d.appPort)).version, 'a');
    // The failing post-deploy hook ran (in the app folder) and is only a warning.
    assert.equal(fs.readFileSync(path.join(d.root, 'releases', `001-${a}`, 'apps/web/post.txt'), 'utf8').trim(), `post 001-${a}`);
    assert.match((await d.get('/logs/1')).text, /warning: hook post-deploy\.sh failed \(exit code 3\)/);

    // A failing pre-deploy hook (repository root fallback) fails the deployment before the build; the old app serves on.
    const b = repo.commit(web('b', { 'apps/web/post-deploy.sh': null, 'pre-deploy.sh': '#!/bin/sh\necho checking\nexit 1\n' }));
    await d.github('push', githubPush(repo, b));
    s = await settled(d);
    assert.equal(s.last_failed_deployment.reason, 'pre_deploy_hook_failed');
    assert.equal((await appSays(d.appPort)).version, 'a');
    assert.match(fs.readFileSync(path.join(d.root, 'logs', 'hooks.log'), 'utf8'), /pre-deploy\.sh: hook pre-deploy\.sh failed/);

    // A hung hook is killed with its process group at HOOK_TIMEOUT.
    const c = repo.commit(web('c', { 'pre-deploy.sh': '#!/bin/sh\nsleep 600 &\nsleep 600\n' }));
    await d.github('push', githubPush(repo, c));
    s = await settled(d);
    assert.equal(s.last_failed_deployment.commit_full, c);
    assert.match((await d.get(`/logs/${c}-FAILED`)).text, /did not finish within 2 s/);
    assert.deepEqual(buildPids(d.root), [], 'the hook group is gone');
    assert.equal((await appSays(d.appPort)).version, 'a');
  });

  it('SKIP_HOOKS skips the hooks; SKIP_HEALTH_CHECK makes a silent release live; POLLING_INTERVAL deploys without webhooks', async () => {
    const repo = new Repo();
    const a = repo.commit({ ...nodeApp('silent', { serve: false }), 'pre-deploy.sh': '#!/bin/sh\nexit 1\n' });
    const d = await deployer(repo, { SKIP_HOOKS: 'true', SKIP_HEALTH_CHECK: 'true', POLLING_INTERVAL: '1' });
    // No webhook: the poller finds the head.
    let s = await waitFor(async () => {
      const st = await settled(d);
      return st.current_release ? st : null;
    }, 'a polled deployment');
    assert.equal(s.current_release, `001-${a}`);
    const log = (await d.get('/logs/1')).text;
    assert.match(log, /SKIP_HOOKS is true: pre-deploy\.sh not run/);
    assert.match(log, /SKIP_HEALTH_CHECK is true: not checked/);
    const b = repo.commit(nodeApp('b'));
    s = await waitFor(async () => {
      const st = await settled(d);
      return st.current_release === `002-${b}` ? st : null;
    }, 'the next polled commit');
    await waitFor(async () => (await appSays(d.appPort))?.commit === b, 'the polled release to answer');
    // A head that is live deploys nothing: polling goes on without new releases.
    await new Promise((r) => setTimeout(r, 2500)); // two more polls (the condition is that nothing happens)
    assert.equal((await settled(d)).releases.length, 2);
  });
});

import * as projectModule from '../../plugins/deployer/project.ts';
function require_project() {
  return projectModule;
}
