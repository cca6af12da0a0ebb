/**
 * Route manifests: YAML files validated against manifests/manifest.schema.json and normalised into routes.
 * Errors name `file:line:column` and the reason, so a vendor can fix a file before it ships.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { createAjv } from './schema.ts';
import { YamlSource } from './yaml-source.ts';
import { LEVELS, type Level } from '../plugin-api.ts';
import { REPO_ROOT } from '../paths.ts';
import type { InputSpec } from '../http/input.ts';

const SCHEMA_FILE = path.join(REPO_ROOT, 'manifests', 'manifest.schema.json');
let manifestValidator: ValidateFunction | undefined;
/** The manifest format's validator, compiled on the first manifest parsed: at import it ran before the node listened, and a node loading only cached manifests never needs it. */
const validateManifest = () => (manifestValidator ??= createAjv({ allErrors: false, verbose: true }).compile(JSON.parse(fs.readFileSync(SCHEMA_FILE, 'utf8'))));

export type Method = 'GET' | 'POST' | 'DELETE' | 'WS' | 'SSE';
export type Parser = 'none' | 'raw' | 'raw-json' | 'json' | 'text' | 'multipart' | 'deferred';

export interface RouteSpec {
  id: string;
  plugin: string;
  /** The named listener that serves the route (`listener:` of its manifest). */
  listener: string;
  method: Method;
  /** Manifest path with the prefix, in the manifest's `/:x?` syntax. */
  path: string;
  /** Other full paths serving this route (aliases and alias prefixes). */
  aliases: string[];
  handler?: string;
  level: Level;
  summary?: string;
  body: { parser: Parser; limit: number; schema?: object };
  query: boolean | object;
  params?: object;
  /** The merged path, body and query input (manifest `input` and `inputFrom`). */
  input?: InputSpec;
  statuses: number[];
  removed: false | string;
  httpsOnly: boolean;
  gate?: string;
  deprecated: boolean;
  envelope: boolean;
  operation: boolean;
  appParam: string;
  /** An auth strategy a plugin registers, checked after the level. */
  auth?: string;
  /** A key of the plugin's config whose value is the route's path (bound by the host). */
  pathFromConfig?: string;
  meta: Record<string, unknown>;
  source: string;
}

export interface Manifest {
  file: string;
  /** `file:line:column` of the manifest's `plugin:` value, for errors about the whole file. */
  source: string;
  plugin: string;
  version: string;
  listener: string;
  routes: RouteSpec[];
  /** The manifest's text, so later checks (a plugin's route data) can name `file:line:column` too. */
  text: string;
  /**
   * Set when the manifest came from the build's cache (cache.ts): its route schemas are known to compile,
   * so each compiles on its route's first request rather than at load.
   */
  schemasChecked?: boolean;
}

/** Parsed manifests by their text (cache.ts). */
export interface ManifestLookup {
  lookup(text: string, file: string): Manifest | undefined;
}

export class ManifestError extends Error {}

const DEFAULT_LIMIT = 1024 * 1024;

export function parseSize(v: number | string | undefined, fallback = DEFAULT_LIMIT): number {
  if (v === undefined) return fallback;
  if (typeof v === 'number') return v;
  const m = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)$/i.exec(v)!;
  const mult = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[m[2].toLowerCase() as 'b'];
  return Math.floor(Number(m[1]) * mult);
}

/** Parse and validate one manifest's text; `file` is used in error messages. */
export function parseManifest(text: string, file: string): Manifest {
  const src = new YamlSource(text, file);
  const syntax = src.syntaxError();
  if (syntax) throw new ManifestError(syntax);
  const raw = src.doc.toJS();
  const validate = validateManifest();
  if (!validate(raw)) {
    const err = pickError(validate.errors!);
    const oneOf = (t: string) => `${t.slice(0, t.lastIndexOf(': '))}: must be ${describeOneOf(err.schema)}`;
    throw new ManifestError(src.locate(err, err.keyword === 'oneOf' ? oneOf : undefined));
  }
  const unknown = unknownSchemaKeyword(raw);
  if (unknown) throw new ManifestError(`${src.ofKey(unknown.path)}: ${unknown.keyword} is not a JSON Schema keyword (${unknown.where})`);
  return { ...normalise(raw, file, src.of(['plugin']), (routeIndex) => src.of(['routes', routeIndex])), text };
}

/** Locate a problem in a manifest's `x` block of route `routeIndex` (see core/manifest/route-data.ts). */
export function locateInManifest(m: Manifest, keyPath: (string | number)[], err: ErrorObject, prefix = ''): string {
  return new YamlSource(m.text, m.file).locate(err, undefined, keyPath, prefix);
}

// Every keyword this ajv knows, annotations (`default`, `title`) and the host's own included.
let knownKeywords: Record<string, boolean> | undefined;
const keywords = () => (knownKeywords ??= (createAjv({ strict: true }) as unknown as { RULES: { keywords: Record<string, boolean> } }).RULES.keywords);
/** Keywords whose value is an object of schemas, a schema, or a list of schemas. */
const SCHEMA_MAPS = ['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas'];
const SCHEMA_ONE = ['additionalProperties', 'additionalItems', 'contains', 'propertyNames', 'not', 'if', 'then', 'else', 'unevaluatedProperties', 'unevaluatedItems', 'items'];
const SCHEMA_LIST = ['allOf', 'anyOf', 'oneOf', 'items', 'prefixItems'];

/**
 * The first key of a route schema that is no JSON Schema keyword (ajv strict mode would refuse the schema;
 * this finds where, so the error names the key's line and column). Walks every schema place of a manifest.
 */
function unknownSchemaKeyword(raw: any): { path: (string | number)[]; keyword: string; where: string } | undefined {
  const places: (string | number)[][] = [];
  for (const name of Object.keys(raw.schemas ?? {})) places.push(['schemas', name]);
  const ofOptions = (base: (string | number)[], o: any) => {
    if (!o || typeof o !== 'object') return;
    if (o.params) places.push([...base, 'params']);
    if (o.query && typeof o.query === 'object') places.push([...base, 'query']);
    if (o.body?.schema) places.push([...base, 'body', 'schema']);
    if (o.input) places.push([...base, 'input']);
  };
  ofOptions(['defaults'], raw.defaults);
  (raw.routes ?? []).forEach((r: any, i: number) => ofOptions(['routes', i], r));
  for (const place of places) {
    const found = walkSchema(place.reduce((o: any, k) => o?.[k], raw), place);
    if (found) return { ...found, where: place.join('.') };
  }
  return undefined;
}

function walkSchema(schema: any, at: (string | number)[]): { path: (string | number)[]; keyword: string } | undefined {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return undefined;
  for (const [k, v] of Object.entries(schema)) {
    if (!Object.hasOwn(keywords(), k)) return { path: [...at, k], keyword: k };
    let found: { path: (string | number)[]; keyword: string } | undefined;
    if (SCHEMA_MAPS.includes(k) && v && typeof v === 'object')
      for (const [name, sub] of Object.entries(v)) found ??= walkSchema(sub, [...at, k, name]);
    if (k === 'dependencies' && v && typeof v === 'object')
      for (const [name, sub] of Object.entries(v)) if (!Array.isArray(sub)) found ??= walkSchema(sub, [...at, k, name]);
    if (SCHEMA_LIST.includes(k) && Array.isArray(v)) v.forEach((sub, i) => (found ??= walkSchema(sub, [...at, k, i])));
    else if (SCHEMA_ONE.includes(k)) found ??= walkSchema(v, [...at, k]);
    if (found) return found;
  }
  return undefined;
}

export function loadManifestFile(file: string, cache?: ManifestLookup): Manifest {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ManifestError(`${file}: cannot be read (${(e as Error).message})`);
  }
  // Messages name the file as the operator typed it: relative inside the working folder, else absolute.
  const rel = path.relative(process.cwd(), file);
  const name = rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : path.resolve(file);
  return cache?.lookup(text, name) ?? parseManifest(text, name);
}

/** Every `*.yaml` manifest of a folder, in name order; the first bad file fails the whole set. */
export function loadManifestDir(dir: string, cache?: ManifestLookup): Manifest[] {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort();
  return files.map((f) => loadManifestFile(path.join(dir, f), cache));
}

/** A `oneOf` failure says more than its first branch's complaint (`query: must be boolean`). */
function pickError(errors: ErrorObject[]): ErrorObject {
  const first = errors[0];
  const oneOf = errors.find((e) => e.keyword === 'oneOf' && first.instancePath.startsWith(e.instancePath));
  return oneOf ?? first;
}

function describeOneOf(branches: unknown): string {
  const names = (Array.isArray(branches) ? branches : []).map((b: any) => {
    if (b.$ref === '#/definitions/schema') return 'a JSON Schema object';
    if (b.type === 'integer') return 'an integer';
    if (b.type === 'boolean') return 'true or false';
    if (b.type === 'string' && b.pattern?.includes('kb')) return "a size such as '64kb'";
    if (b.type === 'string') return 'a string';
    return 'valid';
  });
  return names.length ? names.join(' or ') : 'one of the allowed forms';
}

function normalise(raw: any, file: string, source: string, where: (i: number) => string): Manifest {
  const defaults = raw.defaults ?? {};
  const shared = raw.schemas ?? {};
  const prefix: string = raw.prefix ?? '';
  const listener: string = raw.listener ?? 'api';
  const ids = new Set<string>();
  const routes: RouteSpec[] = raw.routes.map((r: any, i: number) => {
    const src = where(i);
    const o = { ...defaults, ...r };
    if (!o.level) throw new ManifestError(`${src}: route ${r.id} states no level (and defaults give none)`);
    if (!LEVELS.includes(o.level)) throw new ManifestError(`${src}: unknown level ${o.level}`);
    if (!r.id.startsWith(`${raw.plugin}.`)) throw new ManifestError(`${src}: route id ${r.id} must start with '${raw.plugin}.'`);
    if (ids.has(r.id)) throw new ManifestError(`${src}: route id ${r.id} is used twice`);
    ids.add(r.id);
    if (!o.removed && !o.handler) throw new ManifestError(`${src}: route ${r.id} names no handler`);
    const method: Method = o.method ?? 'GET';
    const body = { parser: 'none', ...defaults.body, ...r.body };
    if (method !== 'POST' && body.parser !== 'none' && r.body) throw new ManifestError(`${src}: route ${r.id}: only POST routes take a body`);
    // Uploaded files are removed when the request ends; an operation's handler runs after that.
    if (o.operation && body.parser === 'multipart') throw new ManifestError(`${src}: route ${r.id}: an operation cannot take a multipart body`);
    const full = prefix + r.path;
    let input: InputSpec | undefined;
    if (o.input) {
      if (r.params || typeof r.query === 'object' || r.body?.schema)
        throw new ManifestError(`${src}: route ${r.id}: input declares the whole input; drop its params, query and body.schema`);
      input = { from: o.inputFrom ?? ['path', 'body', 'query'], schema: inlineRefs(o.input, shared, src) };
    }
    const aliases = [...(r.aliases ?? []), ...(raw.aliasPrefixes ?? []).map((p: string) => p + r.path)];
    return {
      id: r.id,
      plugin: raw.plugin,
      listener,
      method,
      path: full,
      aliases,
      handler: o.handler,
      level: o.level,
      summary: o.summary,
      body: {
        parser: method === 'POST' ? body.parser : 'none',
        limit: parseSize(body.limit),
        schema: body.schema ? inlineRefs(body.schema, shared, src) : undefined,
      },
      // A route whose input reads the query string takes one, whatever the defaults say.
      query: input ? input.from.includes('query') || o.query !== false : typeof o.query === 'object' ? inlineRefs(o.query, shared, src) : (o.query ?? true),
      params: input ? undefined : o.params ? inlineRefs(o.params, shared, src) : undefined,
      input,
      statuses: o.statuses ?? [],
      removed: o.removed ? (typeof o.removed === 'string' ? o.removed : 'a later version') : false,
      httpsOnly: !!o.httpsOnly,
      gate: o.gate,
      deprecated: !!o.deprecated,
      envelope: o.envelope ?? true,
      operation: !!o.operation,
      appParam: o.appParam ?? 'appname',
      auth: o.auth,
      pathFromConfig: r.pathFromConfig,
      meta: r.x ?? {},
      source: src,
    } satisfies RouteSpec;
  });
  return { file, source, plugin: raw.plugin, version: raw.version, listener, routes, text: '' };
}

/** Replace `{$ref: '#/schemas/name'}` by the shared schema, so each route compiles on its own. */
function inlineRefs(schema: any, shared: Record<string, object>, src: string): any {
  if (Array.isArray(schema)) return schema.map((s) => inlineRefs(s, shared, src));
  if (!schema || typeof schema !== 'object') return schema;
  if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#/schemas/')) {
    const name = schema.$ref.slice('#/schemas/'.length);
    if (!shared[name]) throw new ManifestError(`${src}: unknown shared schema ${schema.$ref}`);
    return inlineRefs(shared[name], shared, src);
  }
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, inlineRefs(v, shared, src)]));
}

/** `/a/:x?/:y?` in the manifest becomes `/a{/:x}{/:y}` for path-to-regexp 8 (core/http/router.ts). */
export function toRouterPath(p: string): string {
  return p.replace(/\/:([A-Za-z][A-Za-z0-9_]*)\?/g, '{/:$1}');
}
