/**
 * A parsed YAML file that can say where things are: `file:line:column` for an offset, a key path or an
 * ajv error, so manifest and config errors point at the text an operator has to fix.
 */
import { createRequire } from 'node:module';
import type { Document, LineCounter } from 'yaml';
import type { ErrorObject } from 'ajv';
import { describeError } from './schema.ts';

// yaml loads with the first YAML text read, not at start: a node started on the built manifest cache and
// without a config file reads none, and the package is 73 of the 468 modules such a start loaded (about
// 50 ms of its 1 s of CPU to the first answer, measured). Its node-type checks compare Symbol.for tokens,
// so documents of this copy and of any other import of the package are told apart the same way.
let yamlLib: typeof import('yaml') | undefined;
const yaml = () => (yamlLib ??= createRequire(import.meta.url)('yaml') as typeof import('yaml'));

export class YamlSource {
  readonly doc: Document.Parsed;
  private readonly lc: LineCounter;

  constructor(
    text: string,
    readonly file: string,
  ) {
    const { parseDocument, LineCounter } = yaml();
    this.lc = new LineCounter();
    this.doc = parseDocument(text, { lineCounter: this.lc, prettyErrors: false });
  }

  /** `file:line:col` of a character offset (`file:1:1` when unknown). */
  at(offset: number | undefined): string {
    if (offset === undefined) return `${this.file}:1:1`;
    const { line, col } = this.lc.linePos(offset);
    return `${this.file}:${line}:${col}`;
  }

  /** The first syntax error as `file:line:col: reason`, or null when the text parsed. */
  syntaxError(): string | null {
    const e = this.doc.errors[0];
    return e ? `${this.at(e.pos[0])}: ${e.message.split('\n')[0]}` : null;
  }

  /** Where the value at `keyPath` starts. */
  of(keyPath: (string | number)[]): string {
    return this.at((this.doc.getIn(keyPath, true) as { range?: [number, number, number] } | undefined)?.range?.[0]);
  }

  /** Where the key at the end of `keyPath` is written (its value's place when the key is not found). */
  ofKey(keyPath: (string | number)[]): string {
    const parent = this.doc.getIn(keyPath.slice(0, -1), true);
    const { isMap, isScalar } = yaml();
    const pair = isMap(parent) ? parent.items.find((p) => isScalar(p.key) && p.key.value === keyPath[keyPath.length - 1]) : undefined;
    return isScalar(pair?.key) && pair.key.range ? this.at(pair.key.range[0]) : this.of(keyPath);
  }

  /**
   * `file:line:col: key: reason` for an ajv error: at the unknown key itself, else at the deepest node
   * that exists on the error's path. `prefix` names the object validated (a config section).
   */
  locate(err: ErrorObject, reason?: (text: string) => string, base: (string | number)[] = [], prefix = ''): string {
    const { path: keyPath, text } = describeError(prefix, err);
    const full = [...base, ...keyPath.map(key)];
    const { isMap, isNode, isScalar } = yaml();
    let range: [number, number, number] | undefined;
    if (err.keyword === 'additionalProperties') {
      const parent = this.doc.getIn(full.slice(0, -1), true);
      const pair = isMap(parent) ? parent.items.find((p) => isScalar(p.key) && p.key.value === full[full.length - 1]) : undefined;
      range = isScalar(pair?.key) ? (pair.key.range ?? undefined) : undefined;
    }
    let node: unknown;
    for (let n = full.length; !range && n >= 0 && !isNode(node); n--) node = this.doc.getIn(full.slice(0, n), true);
    range ??= isNode(node) ? (node.range ?? undefined) : undefined;
    return `${this.at(range?.[0])}: ${reason ? reason(text) : text}`;
  }
}

function key(k: string | number) {
  return typeof k === 'string' && /^\d+$/.test(k) ? Number(k) : k;
}
