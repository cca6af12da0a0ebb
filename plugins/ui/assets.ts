/**
 * The built web interface (dist/ui/, made by scripts/build.mjs from ui/): the index page's HTML and the
 * hashed asset files, read once at set-up and held in memory (about 60 KB of JavaScript and CSS with
 * their .gz copies), so a page load never touches the disk.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** plugins/ui/assets.ts (tests, tools) reads the build beside the sources; dist/plugins/ui/assets.js its own tree. */
export const BUILT_UI_DIR = HERE.split(path.sep).includes('dist') ? path.resolve(HERE, '../../ui') : path.resolve(HERE, '../../dist/ui');

export interface Asset {
  body: Buffer;
  gzip?: Buffer;
  type: string;
}

export interface BuiltUi {
  /** By file name (`app-<hash>.js`). */
  assets: Map<string, Asset>;
  js: string[];
  css: string[];
  /** Chunks the first page imports, announced in the index so they load at once. */
  preload: string[];
}

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/** The build's files, or null when there is none (a checkout not built: the page says how to build). */
export function loadBuiltUi(dir = BUILT_UI_DIR): BuiltUi | null {
  let index: { js: string[]; css: string[]; files?: string[]; preload?: string[] };
  try {
    index = JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8'));
  } catch {
    return null;
  }
  const assets = new Map<string, Asset>();
  for (const name of index.files ?? [...index.js, ...index.css]) {
    const file = path.join(dir, 'assets', name);
    let gzip: Buffer | undefined;
    try {
      gzip = fs.readFileSync(`${file}.gz`);
    } catch {
      gzip = undefined;
    }
    assets.set(name, { body: fs.readFileSync(file), gzip, type: TYPES[path.extname(name)] ?? 'application/octet-stream' });
  }
  return { assets, js: index.js, css: index.css, preload: (index.preload ?? []).filter((f) => assets.has(f)) };
}
