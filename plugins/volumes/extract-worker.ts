/**
 * The extraction as its own process, run unprivileged (uid/gid `nobody` when the node is root): it gets the
 * archive as stdin and the staging folder as descriptor 3 (so it needs no path to either, and no right on
 * the folders above them), extracts with every check of archive.ts, and reports on stdout one JSON line
 * per entry's owner (`{"p":[...parts],"u":uid,"g":gid}`) and a last line `{"done":{entries,bytes}}` or
 * `{"error":{code,name,message}}`. The node applies the owners afterwards, by descriptor.
 */
import { ApiError } from '../../core/plugin-api.ts';
import { extractInto } from './archive.ts';
import { Root } from './safe-path.ts';

const limits = JSON.parse(process.argv[2] ?? '{}');
const out: string[] = [];
const flush = () => {
  if (out.length) process.stdout.write(out.splice(0).join(''));
};

try {
  const root = new Root('/proc/self/fd/3', true);
  const dir = await root.open();
  const stats = await extractInto(dir, process.stdin, limits, {
    onOwner: (p, u, g) => {
      out.push(`${JSON.stringify({ p, u, g })}\n`);
      if (out.length >= 1000) flush();
    },
  });
  await dir.close();
  flush();
  process.stdout.write(`${JSON.stringify({ done: stats })}\n`, () => process.exit(0));
} catch (e) {
  flush();
  const err = e instanceof ApiError ? { code: e.code, name: e.name, message: e.message } : { code: 500, name: 'ExtractFailed', message: `The extraction failed: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` };
  process.stdout.write(`${JSON.stringify({ error: err })}\n`, () => process.exit(1));
}
