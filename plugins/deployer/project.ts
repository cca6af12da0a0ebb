/**
 * Project type detection and the default install / build / run commands per type (reference facts §5),
 * each overridable by INSTALL_COMMAND / BUILD_COMMAND / RUN_COMMAND.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from './proc.ts';

export type ProjectType = 'node' | 'python' | 'static';
export type ServeType = 'node' | 'python' | 'static' | 'custom';

export interface Plan {
  projectType: ProjectType | 'custom';
  serveType: ServeType;
  install: Command | null;
  build: Command | null;
  /** null when the run command can only be known after the build (a static output folder). */
  run: Command | null;
  /** Folders an install fills, reused by the next release when the lock files are unchanged. */
  depsDirs: string[];
  /** Files whose hash decides whether to install again. */
  lockFiles: string[];
  /** Env the commands need (PYTHONPATH for the python deps folder). */
  env: Record<string, string>;
}

export class ProjectError extends Error {}

const LOCK_FILES = [
  'package-lock.json', 'yarn.lock', 'pnpm-lock.yaml', 'npm-shrinkwrap.json',
  'requirements.txt', 'poetry.lock', 'Pipfile.lock', 'pyproject.toml',
];
const STATIC_DIRS = ['dist', 'build', 'out', 'public', '.output/public', '_site'];
const STATIC_SERVER = fileURLToPath(new URL('./static-server.mjs', import.meta.url));
const PY_DEPS = '.pydeps';

const has = (dir: string, f: string) => fs.existsSync(path.join(dir, f));

function readJson(file: string): any {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ProjectError(`${path.basename(file)} is not valid JSON: ${(e as Error).message}`);
  }
}

export function detectType(dir: string): ProjectType | null {
  if (has(dir, 'package.json')) return 'node';
  if (['requirements.txt', 'pyproject.toml', 'Pipfile', 'setup.py'].some((f) => has(dir, f))) return 'python';
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

/** The plan for the checkout in `dir`; the operator's commands win over the defaults. */
export function plan(dir: string, o: Overrides): Plan {
  const detected = o.projectType === 'auto' ? detectType(dir) : o.projectType;
  const type = detected ?? (o.runCommand.trim() ? 'custom' : null);
  if (!type)
    throw new ProjectError('cannot tell the project type (no package.json, requirements.txt, pyproject.toml, Pipfile, setup.py or index.html); set PROJECT_TYPE or RUN_COMMAND');
  const base = type === 'node' ? nodePlan(dir) : type === 'python' ? pythonPlan(dir) : type === 'static' ? staticPlan() : customPlan();
  const run = shell(o.runCommand) ?? base.run;
  return {
    ...base,
    projectType: type,
    serveType: o.runCommand.trim() ? (type === 'static' ? 'custom' : base.serveType) : base.serveType,
    install: o.installCommand.trim() ? shell(o.installCommand) : base.install,
    build: o.buildCommand.trim() ? shell(o.buildCommand) : base.build,
    run,
  };
}

function nodePlan(dir: string): Omit<Plan, 'projectType'> {
  const pkg = readJson(path.join(dir, 'package.json'));
  const scripts = (pkg && typeof pkg.scripts === 'object' && pkg.scripts) || {};
  const install: Command =
    has(dir, 'pnpm-lock.yaml') ? { argv: ['pnpm', 'install', '--frozen-lockfile'] }
    : has(dir, 'yarn.lock') ? { argv: ['yarn', 'install', '--frozen-lockfile'] }
    : has(dir, 'package-lock.json') || has(dir, 'npm-shrinkwrap.json') ? { argv: ['npm', 'ci', '--no-audit', '--no-fund'] }
    : { argv: ['npm', 'install', '--no-audit', '--no-fund'] };
  const build: Command | null = typeof scripts.build === 'string' ? { argv: ['npm', 'run', 'build'] } : null;
  let run: Command | null = null;
  let serveType: ServeType = 'node';
  if (typeof scripts.start === 'string') run = { argv: ['npm', 'start'] };
  else if (typeof pkg.main === 'string' && has(dir, pkg.main)) run = { argv: ['node', pkg.main] };
  else {
    const entry = ['server.js', 'index.js', 'app.js', 'main.js'].find((f) => has(dir, f));
    if (entry) run = { argv: ['node', entry] };
    // No server: a front-end whose build emits static files, served by the built-in server.
    else serveType = 'static';
  }
  return { serveType, install, build, run, depsDirs: ['node_modules'], lockFiles: LOCK_FILES.slice(0, 4), env: {} };
}

function pythonPlan(dir: string): Omit<Plan, 'projectType'> {
  const pip = (args: string[]): Command => ({ argv: ['python3', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--target', PY_DEPS, ...args] });
  const install = has(dir, 'requirements.txt') ? pip(['-r', 'requirements.txt']) : has(dir, 'pyproject.toml') || has(dir, 'setup.py') ? pip(['.']) : null;
  let run: Command | null = null;
  const procfile = has(dir, 'Procfile') ? fs.readFileSync(path.join(dir, 'Procfile'), 'utf8') : '';
  const web = /^web:\s*(.+)$/m.exec(procfile)?.[1]?.trim();
  if (web) run = { shell: web };
  else {
    const entry = ['app.py', 'main.py', 'server.py', 'wsgi.py'].find((f) => has(dir, f));
    if (entry) run = { argv: ['python3', entry] };
  }
  if (!run) throw new ProjectError('python project without a Procfile web command or app.py / main.py / server.py; set RUN_COMMAND');
  return { serveType: 'python', install, build: null, run, depsDirs: [PY_DEPS], lockFiles: LOCK_FILES.slice(4), env: { PYTHONPATH: PY_DEPS } };
}

function staticPlan(): Omit<Plan, 'projectType'> {
  return { serveType: 'static', install: null, build: null, run: null, depsDirs: [], lockFiles: [], env: {} };
}

function customPlan(): Omit<Plan, 'projectType'> {
  return { serveType: 'custom', install: null, build: null, run: null, depsDirs: [], lockFiles: [], env: {} };
}

/** After the build: the command serving a static site (the built output folder, else the checkout). */
export function staticRun(dir: string, port: number, projectType: string): Command {
  const out = STATIC_DIRS.find((d) => fs.existsSync(path.join(dir, d, 'index.html')));
  const root = out ?? (has(dir, 'index.html') ? '.' : null);
  if (!root)
    throw new ProjectError(
      projectType === 'node'
        ? `no start script, main file or server.js, and the build left no index.html in ${STATIC_DIRS.join(', ')}; set RUN_COMMAND`
        : 'no index.html to serve',
    );
  return { argv: [process.execPath, STATIC_SERVER, root, String(port)] };
}

/** Hash of the lock files present plus the install command: equal hashes mean the same dependencies. */
export function lockHash(dir: string, p: Plan): string | null {
  const present = p.lockFiles.filter((f) => has(dir, f));
  if (!present.length || !p.install) return null;
  const h = crypto.createHash('sha256').update(JSON.stringify(p.install));
  for (const f of present) h.update(`\0${f}\0`).update(fs.readFileSync(path.join(dir, f)));
  return h.digest('hex');
}
