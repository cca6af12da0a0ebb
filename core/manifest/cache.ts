/**
 * Manifests already checked, by the SHA-256 of their text: the build (scripts/build.mjs) parses the shipped
 * manifests with the code it just compiled, compiles every route schema, and writes the results to
 * `dist/manifest-cache.json`. A node loading a manifest whose text is there takes the parsed routes from the
 * file instead of parsing the YAML and checking it against the format (about 0.45 s of CPU at start for the
 * shipped set, measured), and compiles each route's schemas on its first request instead of at load (about
 * 0.45 s more): the build proved they compile. Any other text (a vendor's changed manifest, an edit) misses
 * and is parsed and compiled in full as before, with the same errors at `file:line:column`.
 *
 * The entries are valid only for the code that made them, so only the compiled tree reads the build's file
 * (tests running the sources through tsx parse everything); and only while the manifest format
 * (manifests/manifest.schema.json) is the one they were checked against: its hash is in the file.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bindRoute } from '../http/chain.ts';
import { BUILD_DIR, BUILT, REPO_ROOT } from '../paths.ts';
import { parseManifest, type Manifest, type RouteSpec } from './parse.ts';

/** Stands for the file name in cached `file:line:column` sources; the name is the one the node is given. */
const FILE = '\u0000';
const FORMAT = 1;

interface CacheFile {
  format: number;
  /** SHA-256 of the manifest format (manifest.schema.json) the entries were checked against. */
  schema: string;
  entries: Record<string, Omit<Manifest, 'file' | 'text' | 'schemasChecked'>>;
}

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');
const schemaHash = () => sha256(fs.readFileSync(path.join(REPO_ROOT, 'manifests', 'manifest.schema.json'), 'utf8'));

export class ManifestCache {
  static readonly EMPTY = new ManifestCache({ format: FORMAT, schema: '', entries: {} });

  private constructor(private readonly data: CacheFile) {}

  /** The cache a file holds; empty when it is missing, unreadable, or made for another manifest format. */
  static read(file: string): ManifestCache {
    let data: CacheFile;
    try {
      data = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch {
      return ManifestCache.EMPTY;
    }
    return data?.format === FORMAT && data.schema === schemaHash() && data.entries ? new ManifestCache(data) : ManifestCache.EMPTY;
  }

  /**
   * Every manifest among `files` that parses and whose route schemas all compile (any other is left out:
   * the node reports it at load as before).
   */
  static build(files: string[]): ManifestCache {
    const entries: CacheFile['entries'] = {};
    for (const f of files) {
      const text = fs.readFileSync(f, 'utf8');
      try {
        const m = parseManifest(text, FILE);
        for (const r of m.routes) bindRoute(r, undefined);
        const { file: _f, text: _t, schemasChecked: _s, ...rest } = m;
        entries[sha256(text)] = rest;
      } catch {
        // not cached: the host parses it and names the problem
      }
    }
    return new ManifestCache({ format: FORMAT, schema: schemaHash(), entries });
  }

  get size(): number {
    return Object.keys(this.data.entries).length;
  }

  /** Every route of every cached manifest (the build compiles their input schemas: core/built-validators.ts). */
  routes(): RouteSpec[] {
    return Object.values(this.data.entries).flatMap((m) => m.routes);
  }

  write(file: string): void {
    fs.writeFileSync(file, JSON.stringify(this.data));
  }

  /** The manifest `text` parses to, named `file`, when it is cached (a fresh copy: callers may change it). */
  lookup(text: string, file: string): Manifest | undefined {
    const hit = this.size ? this.data.entries[sha256(text)] : undefined;
    if (!hit) return undefined;
    const m = structuredClone(hit);
    const named = (s: string) => (s.startsWith(FILE) ? file + s.slice(FILE.length) : s);
    m.source = named(m.source);
    for (const r of m.routes) r.source = named(r.source);
    return { ...m, file, text, schemasChecked: true };
  }
}

let built: ManifestCache | undefined;
/** The build's cache (dist/manifest-cache.json) when this process runs the compiled tree, else empty. */
export function builtManifestCache(): ManifestCache {
  return (built ??= BUILT ? ManifestCache.read(path.join(BUILD_DIR, 'manifest-cache.json')) : ManifestCache.EMPTY);
}
