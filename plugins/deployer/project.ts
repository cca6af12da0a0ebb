/**
 * Project type detection and the default install / build / run commands per type (reference facts §5),
 * each overridable by INSTALL_COMMAND / BUILD_COMMAND / RUN_COMMAND. Detection looks at the app folder
 * (PROJECT_PATH inside the checkout, else its root).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from './proc.ts';
import type { PROJECT_TYPES } from './config.ts';

export type ProjectType = (typeof PROJECT_TYPES)[number];
export type ServeType = ProjectType | 'custom';

export interface Plan {
  projectType: ProjectType | 'custom';
  serveType: ServeType;
  install: Command | null;
  build: Command | null;
  /** null when the run command can only be known after the build (a static output folder, a jar). */
  run: Command | null;
  /** Folders an install fills, reused by the next release when the lock files are unchanged. */
  depsDirs: string[];
  /** Files whose hash decides whether to install again. */
  lockFiles: string[];
  /** Env the commands need; values starting with `./` are folders of the app, made absolute by the engine. */
  env: Record<string, string>;
  /** Folders of the app put first on PATH for its commands (`./node_modules/.bin`). */
  binDirs?: string[];
}

export class ProjectError extends Error {}

const STATIC_DIRS = ['dist', 'build', 'out', 'public', '.output/public', '_site'];
const PY_DEPS = '.pydeps';

const has = (dir: string, f: string) => fs.existsSync(path.join(dir, f));
const read = (dir: string, f: string) => {
  try {
    return fs.readFileSync(path.join(dir, f), 'utf8');
  } catch {
    return '';
  }
};
const sh = (s: string): Command => ({ shell: s });

function readJson(file: string): any {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ProjectError(`${path.basename(file)} is not valid JSON: ${(e as Error).message}`);
  }
}

const dotnetProject = (dir: string) => fs.readdirSync(dir).find((f) => /\.(csproj|fsproj|vbproj)$/.test(f));
const dotnetSolution = (dir: string) => fs.readdirSync(dir).find((f) => f.endsWith('.sln'));

/** Markers in the order the reference's client checks them; Bun's markers are Bun-only, so they come first. */
export function detectType(dir: string): ProjectType | null {
  if (['bun.lockb', 'bun.lock', 'bunfig.toml'].some((f) => has(dir, f))) return 'bun';
  if (has(dir, 'package.json')) return 'node';
  if (['requirements.txt', 'pyproject.toml', 'Pipfile', 'setup.py'].some((f) => has(dir, f))) return 'python';
  if (has(dir, 'Cargo.toml')) return 'rust';
  if (has(dir, 'go.mod')) return 'go';
  if (['pom.xml', 'build.gradle', 'build.gradle.kts'].some((f) => has(dir, f))) return 'java';
  if (has(dir, 'composer.json')) return 'php';
  if (has(dir, 'Gemfile')) return 'ruby';
  if (dotnetProject(dir) || dotnetSolution(dir)) return 'dotnet';
  if (has(dir, 'index.html')) return 'static';
  return null;
}

export interface Overrides {
  projectType: 'auto' | ProjectType;
  installCommand: string;
  buildCommand: string;
  runCommand: string;
}

const shell = (s: string): Command | null => (s.trim() ? { shell: s } : null);

type Base = Omit<Plan, 'projectType'>;
const PLANS: Record<ProjectType, (dir: string) => Base> = {
  node: nodePlan,
  bun: bunPlan,
  python: pythonPlan,
  static: () => ({ serveType: 'static', install: null, build: null, run: null, depsDirs: [], lockFiles: [], env: {} }),
  go: goPlan,
  rust: rustPlan,
  ruby: rubyPlan,
  java: javaPlan,
  php: phpPlan,
  dotnet: dotnetPlan,
};

/** The plan for the app in `dir`; the operator's commands win over the defaults. */
export function plan(dir: string, o: Overrides): Plan {
  const detected = o.projectType === 'auto' ? detectType(dir) : o.projectType;
  const type = detected ?? (o.runCommand.trim() ? 'custom' : null);
  if (!type)
    throw new ProjectError(
      'cannot tell the project type (no package.json, requirements.txt, pyproject.toml, Pipfile, setup.py, Cargo.toml, go.mod, pom.xml, build.gradle, composer.json, Gemfile, *.csproj or index.html); set PROJECT_TYPE or RUN_COMMAND',
    );
  const custom = !!o.runCommand.trim();
  let base: Base;
  try {
    base = type === 'custom' ? { serveType: 'custom', install: null, build: null, run: null, depsDirs: [], lockFiles: [], env: {} } : PLANS[type](dir);
  } catch (e) {
    // The operator's RUN_COMMAND covers a project the defaults cannot start.
    if (!(e instanceof ProjectError) || !custom) throw e;
    base = { serveType: 'custom', install: null, build: null, run: null, depsDirs: [], lockFiles: [], env: {} };
  }
  return {
    ...base,
    projectType: type,
    serveType: custom ? (type === 'static' ? 'custom' : base.serveType) : base.serveType,
    install: o.installCommand.trim() ? shell(o.installCommand) : base.install,
    build: o.buildCommand.trim() ? shell(o.buildCommand) : base.build,
    run: shell(o.runCommand) ?? base.run,
  };
}

function scriptsOf(dir: string) {
  const pkg = has(dir, 'package.json') ? readJson(path.join(dir, 'package.json')) : {};
  return { pkg: pkg ?? {}, scripts: (pkg && typeof pkg.scripts === 'object' && pkg.scripts) || {} };
}

function nodePlan(dir: string): Base {
  const { pkg, scripts } = scriptsOf(dir);
  const install: Command =
    has(dir, 'pnpm-lock.yaml') ? { argv: ['pnpm', 'install', '--frozen-lockfile'] }
    : has(dir, 'yarn.lock') ? { argv: ['yarn', 'install', '--frozen-lockfile'] }
    : has(dir, 'package-lock.json') || has(dir, 'npm-shrinkwrap.json') ? { argv: ['npm', 'ci', '--no-audit', '--no-fund'] }
    : { argv: ['npm', 'install', '--no-audit', '--no-fund'] };
  const build: Command | null = typeof scripts.build === 'string' ? { argv: ['npm', 'run', 'build'] } : null;
  let run: Command | null = null;
  let serveType: ServeType = 'node';
  // The start script itself, not `npm start`: npm's own boot (about 1.5 s on a loaded 2-core machine) was
  // most of the app's downtime during a swap. npm start only when pre/post start scripts must run too.
  if (typeof scripts.start === 'string')
    run = typeof scripts.prestart === 'string' || typeof scripts.poststart === 'string' ? { argv: ['npm', 'start'] } : { shell: scripts.start };
  else if (typeof pkg.main === 'string' && has(dir, pkg.main)) run = { argv: ['node', pkg.main] };
  else {
    const entry = ['server.js', 'index.js', 'app.js', 'main.js'].find((f) => has(dir, f));
    if (entry) run = { argv: ['node', entry] };
    // No server: a front-end whose build emits static files, served by the built-in server.
    else serveType = 'static';
  }
  return { serveType, install, build, run, depsDirs: ['node_modules'], lockFiles: ['package-lock.json', 'yarn.lock', 'pnpm-lock.yaml', 'npm-shrinkwrap.json'], env: {}, binDirs: ['./node_modules/.bin'] };
}

function bunPlan(dir: string): Base {
  const { pkg, scripts } = scriptsOf(dir);
  const locked = has(dir, 'bun.lockb') || has(dir, 'bun.lock');
  const install: Command = { argv: ['bun', 'install', ...(locked ? ['--frozen-lockfile'] : [])] };
  const build: Command | null = typeof scripts.build === 'string' ? { argv: ['bun', 'run', 'build'] } : null;
  let run: Command | null = null;
  if (typeof scripts.start === 'string') run = { argv: ['bun', 'run', 'start'] };
  else {
    const entry = [typeof pkg.main === 'string' ? pkg.main : '', 'index.ts', 'server.ts', 'index.js', 'server.js'].find((f) => f && has(dir, f));
    if (!entry) throw new ProjectError('bun project without a start script or index.ts / server.ts / index.js; set RUN_COMMAND');
    run = { argv: ['bun', entry] };
  }
  return { serveType: 'bun', install, build, run, depsDirs: ['node_modules'], lockFiles: ['bun.lockb', 'bun.lock'], env: {} };
}

function pythonPlan(dir: string): Base {
  const pip = (args: string[]): Command => ({ argv: ['python3', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--target', PY_DEPS, ...args] });
  const install = has(dir, 'requirements.txt') ? pip(['-r', 'requirements.txt']) : has(dir, 'pyproject.toml') || has(dir, 'setup.py') ? pip(['.']) : null;
  let run: Command | null = null;
  const web = /^web:\s*(.+)$/m.exec(read(dir, 'Procfile'))?.[1]?.trim();
  if (web) run = { shell: web };
  else {
    const entry = ['app.py', 'main.py', 'server.py', 'wsgi.py'].find((f) => has(dir, f));
    if (entry) run = { argv: ['python3', entry] };
  }
  if (!run) throw new ProjectError('python project without a Procfile web command or app.py / main.py / server.py; set RUN_COMMAND');
  return {
    serveType: 'python', install, build: null, run, depsDirs: [PY_DEPS],
    lockFiles: ['requirements.txt', 'poetry.lock', 'Pipfile.lock', 'pyproject.toml'], env: { PYTHONPATH: `./${PY_DEPS}` },
  };
}

/** Go: a static binary (CGO off, stripped) named after the module path's last part. */
function goPlan(dir: string): Base {
  const mod = /^module\s+("?)([^\s"]+)\1\s*$/m.exec(read(dir, 'go.mod'))?.[2];
  if (!mod) throw new ProjectError('go.mod has no module line');
  const name = mod.split('/').pop()!.replace(/[^A-Za-z0-9._-]/g, '_') || 'app';
  return {
    serveType: 'go',
    install: { argv: ['go', 'mod', 'download'] },
    build: { argv: ['go', 'build', '-trimpath', '-ldflags', '-w -s', '-o', name, '.'] },
    run: { argv: [`./${name}`] },
    depsDirs: [],
    lockFiles: ['go.mod', 'go.sum'],
    env: { CGO_ENABLED: '0' },
  };
}

function rustPlan(dir: string): Base {
  const toml = read(dir, 'Cargo.toml');
  const pkg = /\[package\][^[]*?^\s*name\s*=\s*"([^"]+)"/ms.exec(toml)?.[1];
  if (!pkg) throw new ProjectError('Cargo.toml has no [package] name (a workspace needs RUN_COMMAND)');
  const bin = /\[\[bin\]\][^[]*?^\s*name\s*=\s*"([^"]+)"/ms.exec(toml)?.[1] ?? pkg;
  return {
    serveType: 'rust',
    install: { argv: ['cargo', 'fetch'] },
    build: { argv: ['cargo', 'build', '--release'] },
    run: { argv: [`./target/release/${bin}`] },
    depsDirs: [],
    lockFiles: ['Cargo.lock'],
    env: {},
  };
}

/** Ruby: bundler's deployment mode through its env settings (the flags of the reference are deprecated). */
function rubyPlan(dir: string): Base {
  const rails = has(dir, 'config/application.rb') && has(dir, 'bin/rails');
  const env: Record<string, string> = { BUNDLE_PATH: './vendor/bundle', BUNDLE_WITHOUT: 'development:test' };
  if (has(dir, 'Gemfile.lock')) env.BUNDLE_DEPLOYMENT = 'true';
  let run: Command;
  if (rails) run = sh('exec bundle exec rails server -b 0.0.0.0 -p "$PORT"');
  else if (has(dir, 'config.ru')) run = sh('exec bundle exec rackup -o 0.0.0.0 -p "$PORT"');
  else {
    const entry = ['app.rb', 'main.rb', 'server.rb'].find((f) => has(dir, f));
    if (!entry) throw new ProjectError('ruby project without config.ru, Rails or app.rb / main.rb / server.rb; set RUN_COMMAND');
    run = { argv: ['bundle', 'exec', 'ruby', entry] };
  }
  return {
    serveType: 'ruby',
    install: { argv: ['bundle', 'install'] },
    build: rails ? { argv: ['bundle', 'exec', 'rails', 'assets:precompile'] } : null,
    run,
    depsDirs: ['vendor/bundle'],
    lockFiles: ['Gemfile.lock', 'Gemfile'],
    env,
  };
}

function javaPlan(dir: string): Base {
  const maven = has(dir, 'pom.xml');
  const tool = maven ? (has(dir, 'mvnw') ? './mvnw' : 'mvn') : has(dir, 'gradlew') ? './gradlew' : 'gradle';
  return {
    serveType: 'java',
    install: maven ? { argv: [tool, 'dependency:go-offline', '-B'] } : { argv: [tool, 'dependencies', '--no-daemon'] },
    build: maven ? { argv: [tool, 'clean', 'package', '-DskipTests', '-B'] } : { argv: [tool, 'build', '-x', 'test', '--no-daemon'] },
    run: null, // the jar is known after the build
    depsDirs: [],
    lockFiles: ['pom.xml', 'build.gradle', 'build.gradle.kts', 'gradle.lockfile'],
    env: {},
  };
}

function phpPlan(dir: string): Base {
  const laravel = has(dir, 'artisan');
  const docroot = has(dir, 'public') ? 'public' : '.';
  return {
    serveType: 'php',
    install: { argv: ['composer', 'install', '--no-dev', '--optimize-autoloader', '--no-interaction'] },
    build: laravel ? sh('php artisan config:cache && php artisan route:cache && php artisan view:cache') : null,
    run: laravel ? sh('exec php artisan serve --host=0.0.0.0 --port="$PORT"') : sh(`exec php -S 0.0.0.0:"$PORT" -t ${docroot}`),
    depsDirs: ['vendor'],
    lockFiles: ['composer.lock', 'composer.json'],
    env: {},
  };
}

function dotnetPlan(dir: string): Base {
  const proj = dotnetProject(dir);
  const target = proj ?? dotnetSolution(dir)!;
  const text = proj ? read(dir, proj) : '';
  const web = /Sdk="Microsoft\.NET\.Sdk\.Web"/.test(text);
  const assembly = /<AssemblyName>([^<]+)<\/AssemblyName>/.exec(text)?.[1] ?? (proj ? proj.replace(/\.\w+proj$/, '') : null);
  return {
    serveType: 'dotnet',
    install: { argv: ['dotnet', 'restore', target, ...(has(dir, 'packages.lock.json') ? ['--locked-mode'] : [])] },
    build: { argv: ['dotnet', web ? 'publish' : 'build', target, '-c', 'Release', '-o', 'publish'] },
    run: assembly ? { argv: ['dotnet', `publish/${assembly}.dll`] } : { argv: ['dotnet', 'run', '--no-build', '-c', 'Release'] },
    depsDirs: [],
    lockFiles: ['packages.lock.json', ...(proj ? [proj] : [])],
    env: { DOTNET_CLI_TELEMETRY_OPTOUT: '1' },
  };
}

/** After the build: the command of a type whose run target is a build output (static site, jar). */
export function lateRun(dir: string, port: number, projectType: string, staticServer: string): Command {
  if (projectType === 'java') return javaRun(dir);
  const out = STATIC_DIRS.find((d) => fs.existsSync(path.join(dir, d, 'index.html')));
  const root = out ?? (has(dir, 'index.html') ? '.' : null);
  if (!root)
    throw new ProjectError(
      projectType === 'node'
        ? `no start script, main file or server.js, and the build left no index.html in ${STATIC_DIRS.join(', ')}; set RUN_COMMAND`
        : 'no index.html to serve',
    );
  return { argv: [process.execPath, staticServer, root, String(port)] };
}

/** The jar the build made: target/ or build/libs/, not sources/javadoc/tests/plain; -boot/-runner/-exec/-all preferred. */
export function javaRun(dir: string): Command {
  const jars: string[] = [];
  for (const d of ['target', 'build/libs']) {
    try {
      for (const f of fs.readdirSync(path.join(dir, d))) if (f.endsWith('.jar') && !/-(sources|javadoc|tests|plain)\.jar$/.test(f)) jars.push(`${d}/${f}`);
    } catch {
      /* no such folder */
    }
  }
  if (!jars.length) throw new ProjectError('the build left no jar in target/ or build/libs/; set RUN_COMMAND');
  jars.sort((a, b) => Number(/-(boot|runner|exec|all)\.jar$/.test(b)) - Number(/-(boot|runner|exec|all)\.jar$/.test(a)));
  if (/['"$`\\]/.test(jars[0])) throw new ProjectError(`jar name ${jars[0]} needs quoting; set RUN_COMMAND`);
  return sh(`exec java $JAVA_OPTS -jar '${jars[0]}' --server.port="$PORT"`);
}

/** Hash of the lock files present plus the install command: equal hashes mean the same dependencies. */
export function lockHash(dir: string, p: Plan): string | null {
  const present = p.lockFiles.filter((f) => has(dir, f));
  if (!present.length || !p.install) return null;
  const h = crypto.createHash('sha256').update(JSON.stringify(p.install)).update(JSON.stringify(p.env));
  for (const f of present) h.update(`\0${f}\0`).update(fs.readFileSync(path.join(dir, f)));
  return h.digest('hex');
}
