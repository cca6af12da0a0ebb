/**
 * The service's own web page at `/` (status, releases, health, build logs with a live tail), and its two
 * assets under `/ui/`. The page is built by scripts/build.mjs from `ui/` into `page/` beside the compiled
 * plugin (dist/plugins/deployer/page/); it holds no data, so it is public: the data routes it calls keep
 * their API key, which the page asks for and sends as `Authorization: Bearer <key>`.
 *
 * Files are read once, at set-up (about 30 KB, with gzipped copies made by the build).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { reply, type HandlerInput } from '../../core/plugin-api.ts';

/**
 * Only this service itself: scripts and styles from its own files (no inline code), data from its own
 * routes. No frames, no forms posted elsewhere, no <base> rewrites.
 */
export const PAGE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const COMMON = { 'Content-Security-Policy': PAGE_CSP, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' };

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.html': 'text/html; charset=utf-8' };

interface PageFile {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
}

/**
 * Where the build put the page: beside this module when it runs compiled (dist/plugins/deployer/page),
 * in dist/ when it runs from the sources (tests, through tsx).
 */
export function pageDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return import.meta.url.endsWith('.js') ? path.join(here, 'page') : path.resolve(here, '../../dist/plugins/deployer/page');
}

function load(dir: string): Map<string, PageFile> | null {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return null;
  }
  const files = new Map<string, PageFile>();
  for (const n of names) {
    const type = TYPES[path.extname(n)];
    if (!type) continue;
    const gz = path.join(dir, `${n}.gz`);
    files.set(n, { body: fs.readFileSync(path.join(dir, n)), gzip: fs.existsSync(gz) ? fs.readFileSync(gz) : null, type });
  }
  return files.has('index.html') ? files : null;
}

const gzipOk = (headers: HandlerInput['headers']) => /\bgzip\b/.test(String(headers['accept-encoding'] ?? ''));

function send(f: PageFile, headers: HandlerInput['headers'], cache: string) {
  const zipped = f.gzip && gzipOk(headers);
  return reply(200, zipped ? f.gzip : f.body, {
    ...COMMON,
    'Content-Type': f.type,
    'Cache-Control': cache,
    Vary: 'Accept-Encoding',
    ...(zipped ? { 'Content-Encoding': 'gzip' } : {}),
  });
}

export function pageHandlers(dir = pageDir()) {
  const files = load(dir);
  const missing = () =>
    reply(503, 'The page is not built: run `npm run build` (or `npm ci`) in the service\'s folder. The API (/status, /health, /logs) works without it.\n', {
      ...COMMON,
      'Content-Type': 'text/plain; charset=utf-8',
    });
  return {
    /** The page itself: never cached, so a new build's asset names are picked up at once. */
    page({ headers }: HandlerInput) {
      const f = files?.get('index.html');
      return f ? send(f, headers, 'no-store') : missing();
    },
    /** Its script and style: content-hashed names, so they can be cached for good. */
    asset({ values, headers }: HandlerInput) {
      const name: string = values.file;
      const f = name !== 'index.html' ? files?.get(name) : undefined;
      if (!f) return reply(404, { error: 'Not Found', message: `No such file: ${name}` }, COMMON);
      return send(f, headers, 'public, max-age=31536000, immutable');
    },
  };
}
