/**
 * App volumes, as ratios against a baseline measured in the same run on the same tree:
 *   1. copy: the plugin's descriptor-walking copy (what `POST /apps/copyobject` runs) against `cp -a`;
 *   2. compress: the plugin's gzip tar writer (what `compressobject`, `downloadfolder` and backups run)
 *      against `tar czf` (GNU tar + gzip -6, the same level);
 *   3. download: a file through the node (`GET /apps/coreshare/getfile`, the same streaming and Range code as
 *      `downloadfile`, over HTTP on 127.0.0.1, fetched by curl) against reading the file with cat.
 * The tree: `--files` small files (1-64 KB, random bytes: compressible like app data it is not) in nested
 * folders, plus two 32 MB files. Rounds alternate baseline and plugin; medians.
 *
 *   npm run bench:volumes [-- --rounds 3 --files 2000 --download-mb 256]
 */
import { execFile, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { packToFile } from '../../plugins/volumes/archive.ts';
import { Root } from '../../plugins/volumes/safe-path.ts';
import { copyTree } from '../../plugins/volumes/tree.ts';
import { startNode } from '../../test/support/node.ts';
import { bitcoinWallet, login } from '../../test/support/wallets.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const ROUNDS = arg('rounds', 3);
const FILES = arg('files', 2000);
const DOWNLOAD_MB = arg('download-mb', 256);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mbps = (bytes: number, ms: number) => (bytes / 1e6 / (ms / 1000)).toFixed(1);

function makeTree(dir: string): number {
  let bytes = 0;
  // Half random, half text-like: app data compresses somewhere between.
  const text = Buffer.from('the quick brown fox jumps over the lazy dog 0123456789\n'.repeat(2000));
  for (let k = 0; k < FILES; k++) {
    const sub = path.join(dir, `d${k % 20}`, `e${k % 7}`);
    fs.mkdirSync(sub, { recursive: true });
    const size = 1024 * (1 + (k % 64));
    const body = k % 2 ? crypto.randomBytes(size) : text.subarray(0, size);
    fs.writeFileSync(path.join(sub, `f${k}.bin`), body);
    bytes += size;
  }
  for (const n of ['big1.bin', 'big2.bin']) {
    fs.writeFileSync(path.join(dir, n), Buffer.concat([crypto.randomBytes(16 << 20), text.subarray(0, 16 << 20), Buffer.alloc((16 << 20) - Math.min(text.length, 16 << 20))]));
    bytes += fs.statSync(path.join(dir, n)).size;
  }
  return bytes;
}

async function timed(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function main() {
  const base = fs.mkdtempSync('/tmp/h15-bench-');
  try {
    const vol = path.join(base, 'vol');
    const bytes = makeTree(path.join(vol, 'tree'));
    execFileSync('sync');
    console.log(`tree: ${FILES} small files + 2 x 32 MB, ${(bytes / 1e6).toFixed(1)} MB`);
    const root = new Root(vol);
    const r = { cp: [] as number[], copy: [] as number[], tar: [] as number[], pack: [] as number[] };
    let sizes = { tar: 0, pack: 0 };
    for (let i = 0; i < ROUNDS; i++) {
      r.cp.push(await timed(() => execFileSync('cp', ['-a', path.join(vol, 'tree'), path.join(vol, 'cp')])));
      r.copy.push(
        await timed(async () => {
          const top = await root.walk([]);
          await copyTree(top, 'tree', top, 'copy');
          await top.close();
        }),
      );
      fs.rmSync(path.join(vol, 'cp'), { recursive: true });
      fs.rmSync(path.join(vol, 'copy'), { recursive: true });
      r.tar.push(await timed(() => execFileSync('tar', ['czf', path.join(base, 'tar.tar.gz'), '-C', vol, 'tree'])));
      r.pack.push(
        await timed(async () => {
          const top = await root.walk([]);
          await packToFile(top, ['tree'], top, 'pack.tar.gz');
          await top.close();
        }),
      );
      sizes = { tar: fs.statSync(path.join(base, 'tar.tar.gz')).size, pack: fs.statSync(path.join(vol, 'pack.tar.gz')).size };
      fs.rmSync(path.join(base, 'tar.tar.gz'));
      fs.rmSync(path.join(vol, 'pack.tar.gz'));
    }
    const line = (what: string, base: number[], ours: number[]) =>
      console.log(`${what}: baseline ${median(base).toFixed(0)} ms (${mbps(bytes, median(base))} MB/s), plugin ${median(ours).toFixed(0)} ms (${mbps(bytes, median(ours))} MB/s): ratio ${(median(base) / median(ours)).toFixed(2)} (throughput plugin/baseline)`);
    line('copy vs cp -a', r.cp, r.copy);
    line('compress vs tar czf', r.tar, r.pack);
    console.log(`archive sizes: tar czf ${(sizes.tar / 1e6).toFixed(1)} MB, plugin ${(sizes.pack / 1e6).toFixed(1)} MB`);

    // Download through the node: the share route as the operator (no Docker needed; same streaming code).
    const admin = bitcoinWallet();
    const share = path.join(base, 'share');
    fs.mkdirSync(share);
    const file = path.join(share, 'big.bin');
    const chunk = crypto.randomBytes(1 << 20);
    const fd = fs.openSync(file, 'w');
    for (let k = 0; k < DOWNLOAD_MB; k++) fs.writeSync(fd, chunk);
    fs.closeSync(fd);
    const node = await startNode({
      plugins: ['identity', 'apps', 'volumes'],
      dataDir: path.join(base, 'node'),
      config: { initial: { legacyid: admin.legacyid }, apps: { docker: { socketPath: path.join(base, 'no-docker.sock') } }, volumes: { shareDir: share } },
    });
    try {
      const headers = { legacyidauth: (await login(node, admin)).header };
      const d = { read: [] as number[], node: [] as number[] };
      for (let i = 0; i < ROUNDS; i++) {
        // Both read by a separate process (the node's event loop serves only the download): cat vs curl.
        d.read.push(await timed(() => execFileSync('sh', ['-c', `cat "$0" > /dev/null`, file])));
        d.node.push(
          await timed(async () => {
            const n = await new Promise<string>((resolve, reject) =>
              execFile('curl', ['-s', '-o', '/dev/null', '-w', '%{size_download}', '-H', `legacyidauth: ${headers.legacyidauth}`, `${node.url}/apps/coreshare/getfile/big.bin`], (e, out) => (e ? reject(e) : resolve(out))),
            );
            if (Number(n) !== DOWNLOAD_MB << 20) throw new Error(`short download: ${n}`);
          }),
        );
      }
      console.log(
        `download ${DOWNLOAD_MB} MB: cat ${median(d.read).toFixed(0)} ms (${mbps(DOWNLOAD_MB << 20, median(d.read))} MB/s), through the node ${median(d.node).toFixed(0)} ms (${mbps(DOWNLOAD_MB << 20, median(d.node))} MB/s): ratio ${(median(d.read) / median(d.node)).toFixed(2)}`,
      );
    } finally {
      await node.close();
    }
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

await main();
