#!/usr/bin/env node
/**
 * Compile the host and its plugins (core/, lib/, plugins/) to JavaScript in dist/, so the services run on
 * plain `node` (one process, no TypeScript loader in memory). Plain JavaScript: it runs before anything is
 * built. Runs on `npm ci` (the `prepare` script); `npm start`, `npm run deployer` and `npm run corectl`
 * check it first (scripts/launch.mjs), so a `git pull` can never leave an old build running.
 *
 *   node scripts/build.mjs             build now
 *   node scripts/build.mjs --if-stale  build only when a source changed since the last build (a stat of
 *                                      ~100 files, a few ms, when nothing did)
 *   node scripts/build.mjs --check     exit 1 naming the changed file when dist/ is stale (systemd
 *                                      ExecStartPre: the service never starts an old build)
 *
 * dist/.build-stamp lists every source file with its size and mtime at the start of the last build; the
 * build is stale when the list differs (a file changed, was added or was removed). mtimes are what git
 * sets on checkout, so a pull or a branch switch is seen; the build itself never touches the sources.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import zlib from 'node:zlib';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const STAMP = path.join(DIST, '.build-stamp');
/** Compiled (the .ts files) and copied (anything else the code reads next to itself, e.g. a .mjs helper). */
const SOURCE_DIRS = ['core', 'lib', 'plugins'];
/** The transform (a dev dependency). */
const ESBUILD = path.join(ROOT, 'node_modules', 'esbuild', 'lib', 'main.js');
/** Files whose change changes the output. */
const INPUTS = ['tsconfig.json', 'scripts/build.mjs'];
/**
 * The web interface's source (a browser app, not node code): bundled into dist/ui/ by bundleUi, never
 * transpiled file by file like SOURCE_DIRS; its files count for staleness all the same.
 */
const UI_SOURCE = 'ui';
const UI_ENTRY = 'ui/main.tsx';

function walk(dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) walk(rel, out);
    else if (!e.name.endsWith('.md')) out.push(rel);
  }
}

function sources() {
  const files = [];
  for (const d of SOURCE_DIRS) walk(d, files);
  return files;
}

function uiSources() {
  const files = [];
  walk(UI_SOURCE, files);
  return files;
}

/** `path size mtime` per input file, sorted: what the build was made from. */
function fingerprint(files) {
  return [...files, ...INPUTS]
    .map((f) => {
      try {
        const s = fs.statSync(path.join(ROOT, f));
        return `${f} ${s.size} ${Math.round(s.mtimeMs)}`;
      } catch {
        return `${f} missing`;
      }
    })
    .sort();
}

/** Null when dist/ was built from the current sources, else the first difference, for the message. */
export function staleReason() {
  let stamp;
  try {
    stamp = fs.readFileSync(STAMP, 'utf8').split('\n').filter(Boolean);
  } catch {
    return fs.existsSync(DIST) ? 'dist/ has no build stamp' : 'dist/ is not built';
  }
  const now = fingerprint([...sources(), ...uiSources()]);
  const before = new Set(stamp);
  const changed = now.find((l) => !before.has(l));
  if (changed) return `${changed.split(' ')[0]} changed since the last build`;
  const current = new Set(now);
  const gone = stamp.find((l) => !current.has(l));
  return gone ? `${gone.split(' ')[0]} was removed since the last build` : null;
}

class BuildError extends Error {}

/**
 * Build dist/ now (throws BuildError with the reason). One build at a time per checkout: `dist.lock` holds
 * the builder's pid; a second launcher waits for it (then finds the tree fresh), a dead builder's lock is
 * taken over.
 */
export function build() {
  withLock(() => compile());
}

/** Build when stale, telling why on stderr; exits the process with the reason when the build fails. */
export function buildIfStale() {
  const reason = staleReason();
  if (!reason) return;
  try {
    withLock(() => {
      const still = staleReason(); // another launcher may have built it while this one waited
      if (!still) return;
      process.stderr.write(`build: ${still}; building\n`);
      compile();
    });
  } catch (e) {
    fail(e);
  }
}

function fail(e) {
  if (!(e instanceof BuildError)) throw e;
  process.stderr.write(`build: ${e.message}\n`);
  process.exit(e.exitCode ?? 1);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

function withLock(fn) {
  const lock = path.join(ROOT, 'dist.lock');
  const deadline = Date.now() + 600_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      let pid = 0;
      try {
        pid = Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8'));
      } catch {
        // being created: its pid follows at once
      }
      if (pid && !alive(pid)) fs.rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new BuildError(`${lock} is held by pid ${pid} for 10 minutes; remove it if no build runs`);
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
  try {
    fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
    return fn();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

function compile() {
  const t0 = performance.now();
  const files = sources();
  const stamp = fingerprint([...files, ...uiSources()]).join('\n') + '\n'; // taken first: an edit made during the build makes it stale
  if (!fs.existsSync(ESBUILD)) {
    const e = new BuildError('esbuild is not installed; run `npm ci` (with the dev dependencies) first');
    // `npm ci --omit=dev` runs `prepare` too: the install itself need not fail, the start will say why.
    e.exitCode = process.env.npm_lifecycle_event === 'prepare' ? 0 : 1;
    throw e;
  }
  // Into a fresh folder, swapped in at the end: a failed build leaves the previous one, and files of
  // deleted sources do not linger.
  const tmp = path.join(ROOT, `dist.tmp-${process.pid}`);
  fs.rmSync(tmp, { recursive: true, force: true });
  try {
    transpile(ESBUILD, files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')), tmp);
    buildDeployerPage(ESBUILD, tmp);
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new BuildError(`esbuild failed: ${e.message}; dist/ left as it was`);
  }
  for (const f of files.filter((x) => !x.endsWith('.ts') && !x.startsWith(DEPLOYER_PAGE_SRC))) {
    fs.mkdirSync(path.dirname(path.join(tmp, f)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, f), path.join(tmp, f));
  }
  try {
    bundleUi(ESBUILD, tmp);
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new BuildError(`esbuild failed on the web interface (${UI_SOURCE}/): ${e.message}; dist/ left as it was`);
  }
  prepareCaches(tmp);
  fs.writeFileSync(path.join(tmp, '.build-stamp'), stamp);
  const old = path.join(ROOT, `dist.old-${process.pid}`);
  try {
    fs.renameSync(DIST, old);
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  fs.renameSync(tmp, DIST);
  fs.rmSync(old, { recursive: true, force: true });
  process.stderr.write(`build: dist/ built from ${files.length} files in ${Math.round(performance.now() - t0)} ms\n`);
}

/**
 * Each source file to one JavaScript module (no bundling), with esbuild: the transform tsx applies to the
 * same files in the tests, with the same tsconfig.json (its target sets the class field semantics). tsc
 * (transpile only, noCheck) took 9.9 s of CPU for the 194 files, esbuild 0.35 s; types are checked by
 * `npm test` (tsc --noEmit). Relative import specifiers are rewritten from .ts to .js, as tsc's
 * rewriteRelativeImportExtensions did; other dynamic imports take file URLs, which that never rewrote.
 */
function transpile(esbuildPath, files, out) {
  const require = createRequire(import.meta.url);
  const { buildSync } = require(esbuildPath);
  const res = buildSync({
    entryPoints: files.map((f) => path.join(ROOT, f)),
    outdir: out,
    outbase: ROOT,
    bundle: false,
    format: 'esm',
    platform: 'node',
    // The oldest Node this runs on (package.json engines); tsconfig's target only sets class field semantics.
    target: 'node20',
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    write: false,
    logLevel: 'silent',
  });
  for (const f of res.outputFiles) {
    fs.mkdirSync(path.dirname(f.path), { recursive: true });
    fs.writeFileSync(f.path, f.text.replace(RELATIVE_TS, (_, before, q, p, m) => `${before}${q}${p}.${m ?? ''}js${q}`));
  }
}
/**
 * The deployment trigger's web page: plugins/deployer/ui/main.tsx (Preact) and style.css bundled and
 * minified by esbuild into `<out>/plugins/deployer/page/` with content-hashed names, a gzipped copy of each
 * (served to browsers that accept it), and index.html naming them. plugins/deployer/page.ts serves it.
 */
const DEPLOYER_PAGE_SRC = path.join('plugins', 'deployer', 'ui') + path.sep;
function buildDeployerPage(esbuildPath, out) {
  const src = path.join(ROOT, DEPLOYER_PAGE_SRC);
  if (!fs.existsSync(path.join(src, 'main.tsx'))) return;
  const require = createRequire(import.meta.url);
  const { buildSync } = require(esbuildPath);
  const { gzipSync } = require('node:zlib');
  const dest = path.join(out, 'plugins', 'deployer', 'page');
  const res = buildSync({
    entryPoints: [path.join(src, 'main.tsx'), path.join(src, 'style.css')],
    outdir: dest,
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome109', 'firefox115', 'safari15'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  fs.mkdirSync(dest, { recursive: true });
  const names = {};
  const write = (name, text) => {
    fs.writeFileSync(path.join(dest, name), text);
    fs.writeFileSync(path.join(dest, `${name}.gz`), gzipSync(text, { level: 9 }));
  };
  for (const f of res.outputFiles) {
    const name = path.basename(f.path);
    names[path.extname(name)] = name;
    write(name, f.contents);
  }
  write('index.html', fs.readFileSync(path.join(src, 'index.html'), 'utf8').replace('%JS%', names['.js']).replace('%CSS%', names['.css']));
}

/**
 * Test support: these repo-relative TypeScript files into dist/ beside the build, where a child process run
 * from dist/ finds them (core/paths.ts maps a plugins folder inside the repo to its place under dist/), and
 * their relative imports reach the built host. The corectl tests load their fixture plugin this way, so
 * corectl runs as it ships, on plain node: 0.3 s of CPU a run against 1.5 s through tsx.
 */
export function transpileIntoDist(files) {
  transpile(ESBUILD, files, DIST);
}
/**
 * The web interface (ui/, Preact) as one bundle for the browser: dist/ui/assets/<name>-<hash>.js and .css
 * (names change with the content, so the ui plugin serves them with a year's cache), a .gz of each beside
 * it (compressed once here, not per request), and dist/ui/index.json naming the entry's files for the
 * plugin's index page. About 0.1 s; no-op without a ui/ folder.
 */
function bundleUi(esbuildPath, out) {
  if (!fs.existsSync(path.join(ROOT, UI_ENTRY))) return;
  const require = createRequire(import.meta.url);
  const { buildSync } = require(esbuildPath);
  const assets = path.join(out, 'ui', 'assets');
  const res = buildSync({
    entryPoints: { app: path.join(ROOT, UI_ENTRY) },
    outdir: assets,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // Browsers of the last two or three years: no transform of modern syntax, the smallest output.
    target: ['chrome110', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    // Pages are import()ed on first visit (ui/pages.ts): each a chunk, so a large page (a terminal, charts)
    // never weighs on the first one.
    splitting: true,
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    assetNames: '[name]-[hash]',
    legalComments: 'none',
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
  fs.mkdirSync(assets, { recursive: true });
  // js, css: what the index page loads; files: every file served (chunks, the wallet's icon).
  const index = { js: [], css: [], files: [] };
  const outputs = res.outputFiles.map((f) => ({ name: path.basename(f.path), contents: f.contents }));
  outputs.push({ name: 'icon.svg', contents: fs.readFileSync(path.join(ROOT, UI_SOURCE, 'icon.svg')) });
  for (const f of outputs) {
    fs.writeFileSync(path.join(assets, f.name), f.contents);
    fs.writeFileSync(path.join(assets, `${f.name}.gz`), zlib.gzipSync(f.contents, { level: 9 }));
    index.files.push(f.name);
    if (f.name.startsWith('app-') && f.name.endsWith('.js')) index.js.push(f.name);
    else if (f.name.startsWith('app-') && f.name.endsWith('.css')) index.css.push(f.name);
  }
  index.preload = preloads(res.metafile, assets);
  fs.writeFileSync(path.join(out, 'ui', 'index.json'), JSON.stringify(index) + '\n');
}

/**
 * The chunks the first page needs, for `<link rel="modulepreload">` in the index: the entry's static
 * imports and the home page's chunk (UI_HOME) with its own. Without them the browser finds each only
 * after the file importing it has arrived: two more round trips before the first page shows.
 */
const UI_HOME = 'ui/pages/node.tsx';
function preloads(metafile, assets) {
  const outputs = metafile.outputs;
  const byFile = (f) => path.basename(f);
  const found = new Set();
  const walk = (out) => {
    for (const imp of outputs[out]?.imports ?? []) {
      if (imp.kind !== 'import-statement' || found.has(imp.path)) continue;
      found.add(imp.path);
      walk(imp.path);
    }
  };
  for (const [out, o] of Object.entries(outputs)) {
    if (!out.endsWith('.js')) continue;
    const entry = o.entryPoint && path.relative(ROOT, path.resolve(ROOT, o.entryPoint));
    if (entry === UI_ENTRY || entry === UI_HOME) {
      if (entry === UI_HOME) found.add(out);
      walk(out);
    }
  }
  return [...found].map(byFile).filter((f) => fs.existsSync(path.join(assets, f)));
}

/** `from "./x.ts"`, `import "../x.ts"`, `import("./x.ts")` (and .mts, .cts) as esbuild prints them. */
const RELATIVE_TS = /(\b(?:from|import)\s*\(?\s*)(["'])(\.\.?\/[^"'\n]*?)\.(m|c)?ts\2/g;

/**
 * What the build checks once so that no node start repeats it (only optimisations: when they cannot be made,
 * the build still succeeds and the node does the work itself):
 * - dist/manifest-cache.json: the shipped manifests parsed and their route schemas compiled by the code just
 *   built (core/manifest/cache.ts), so the node's start skips both for them;
 * - dist/*-validators.cjs: the node's config schema, the shipped plugins' config and route data schemas and
 *   the shipped routes' input schemas compiled to standalone validators (core/built-validators.ts).
 * One child process for all, on the tree just built.
 */
function prepareCaches(out) {
  const dir = path.join(ROOT, 'manifests');
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => path.join(dir, f)) : [];
  const pluginsDir = path.join(out, 'plugins');
  const plugins = fs.existsSync(pluginsDir) ? fs.readdirSync(pluginsDir).map((id) => path.join(pluginsDir, id, 'index.js')).filter((f) => fs.existsSync(f)).map((f) => pathToFileURL(f).href) : [];
  const url = (f) => JSON.stringify(pathToFileURL(f).href);
  const script = `const { ManifestCache } = await import(${url(path.join(out, 'core', 'manifest', 'cache.js'))});
    const c = ManifestCache.build(${JSON.stringify(files)}); c.write(${JSON.stringify(path.join(out, 'manifest-cache.json'))});
    process.stdout.write(String(c.size) + ' ');
    try {
      const fs = await import('node:fs');
      const { validatorsCode, validatorsFile } = await import(${url(path.join(out, 'core', 'built-validators.js'))});
      const config = [(await import(${url(path.join(out, 'core', 'config.js'))})).nodeConfigSchema];
      const routeData = [(await import(${url(path.join(out, 'core', 'manifest', 'route-data.js'))})).NO_ROUTE_DATA];
      for (const href of ${JSON.stringify(plugins)}) {
        const def = (await import(href)).default;
        if (def?.configSchema) config.push(def.configSchema);
        if (def?.routeData) routeData.push(def.routeData);
      }
      const schemas = { config, routeData, routeParams: [], routeBody: [], routeInput: [] };
      const { routeSchemas } = await import(${url(path.join(out, 'core', 'http', 'chain.js'))});
      for (const r of c.routes()) for (const s of routeSchemas(r)) schemas[s.kind].push(s.schema);
      for (const [kind, list] of Object.entries(schemas)) fs.writeFileSync(${JSON.stringify(out)} + '/' + validatorsFile(kind), validatorsCode(kind, list));
    } catch (e) {
      process.stderr.write('build: validators not made (each node compiles its schemas at start): ' + e.message + '\\n');
    }`;
  const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  process.stderr.write(res.stderr.split('\n').filter((l) => l.startsWith('build: ')).map((l) => l + '\n').join(''));
  const [cached] = res.stdout.split(' ').map(Number);
  if (res.status !== 0) process.stderr.write(`build: manifest cache not made (the node parses every manifest at start): ${res.stderr.trim().split('\n').pop()}\n`);
  else if (cached < files.length) process.stderr.write(`build: ${files.length - cached} of ${files.length} manifests are not cached (invalid: the node will say why)\n`);
}

function main(mode) {
  if (mode === '--check') {
    const reason = staleReason();
    if (reason) {
      process.stderr.write(`build: ${reason}; run \`npm run build\` (or \`npm ci\`) in ${ROOT}\n`);
      process.exit(1);
    }
  } else if (mode === '--if-stale') buildIfStale();
  else if (mode === undefined) {
    try {
      build();
    } catch (e) {
      fail(e);
    }
  } else {
    process.stderr.write('usage: node scripts/build.mjs [--if-stale | --check]\n');
    process.exit(2);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv[2]);
