/**
 * The safe-path module and the archive code on their own (no node, no Docker): the path-input corpus of
 * the reference's vectors, links planted inside a volume, a link swapped in while walks run, and the
 * hostile archives. Everything happens in a temp "volume" beside a "neighbour" folder whose files must
 * never be read or changed.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { extractInto, packStream } from '../../plugins/volumes/archive.ts';
import { extractUnprivileged } from '../../plugins/volumes/extract-run.ts';
import { parseRelPath, Root } from '../../plugins/volumes/safe-path.ts';
import { copyTree, removeTree, sizeOf } from '../../plugins/volumes/tree.ts';
import { hostileArchives, tgz } from './archives.ts';

describe('volumes: the safe-path module and archives', function () {
  const base = fs.mkdtempSync('/tmp/h15-safe-');
  const vol = path.join(base, 'volume');
  const neighbour = path.join(base, 'volume2');
  const root = new Root(vol);
  const SECRET = 'neighbour-secret';

  before(() => {
    fs.mkdirSync(path.join(vol, 'appdata/sub'), { recursive: true });
    fs.mkdirSync(neighbour, { recursive: true });
    fs.writeFileSync(path.join(neighbour, 'x'), SECRET);
    fs.writeFileSync(path.join(vol, 'appdata/file with spaces.txt'), 'ok');
    fs.symlinkSync('/etc', path.join(vol, 'appdata/etc'));
    fs.symlinkSync(neighbour, path.join(vol, 'appdata/next'));
    fs.symlinkSync(path.join(neighbour, 'x'), path.join(vol, 'appdata/nextfile'));
  });
  after(() => fs.rmSync(base, { recursive: true, force: true }));

  it('refuses every malformed path input and accepts ordinary names', () => {
    for (const bad of ['..', '../', 'foo/..', 'foo/../bar', 'foo\\bar', 'file\0name', '/etc/passwd', '../volume2/x', 'a//b', 'a/', './a', '%2e%2e%2f', 'a/b$c', 'x'.repeat(256), 5, {}, ['a']])
      assert.throws(() => parseRelPath(bad, 'p'), /p (must|has|is)/, JSON.stringify(bad));
    for (const good of ['appdata', 'data/subdir', 'my-file_123.txt', 'file with spaces.txt', 'a/b/(c)[d]{e}@#+='])
      assert.deepEqual(parseRelPath(good, 'p'), good.split('/'));
    assert.deepEqual(parseRelPath('', 'p', { allowRoot: true }), []);
  });

  it('never walks through a link planted inside the volume (to /etc, to the neighbour), as a leaf or a parent', async () => {
    for (const p of [['appdata', 'etc'], ['appdata', 'next'], ['appdata', 'etc', 'ssl'], ['appdata', 'nextfile']])
      await assert.rejects(root.walk(p), (e: any) => e.name === 'PathRefused', p.join('/'));
    const { dir, name } = await root.parentOf(['appdata', 'nextfile']);
    await assert.rejects(dir.openRead(name), (e: any) => e.name === 'PathRefused');
    await assert.rejects(root.walk(['appdata', 'next'], { create: true }));
    await dir.close();
    assert.equal(fs.readFileSync(path.join(neighbour, 'x'), 'utf8'), SECRET);
  });

  it('a folder swapped for a link while walks and reads run never yields the neighbour\'s file', async () => {
    const race = path.join(vol, 'appdata/race');
    fs.mkdirSync(race);
    fs.writeFileSync(path.join(race, 'x'), 'mine');
    let stop = false;
    // The swapper: rename the real folder away and a link to the neighbour in, and back, as fast as it can.
    const swapper = (async () => {
      let n = 0;
      while (!stop) {
        fs.renameSync(race, `${race}.real`);
        fs.symlinkSync(neighbour, race);
        await new Promise((r) => setImmediate(r));
        fs.unlinkSync(race);
        fs.renameSync(`${race}.real`, race);
        await new Promise((r) => setImmediate(r));
        n++;
      }
      return n;
    })();
    let reads = 0;
    let refused = 0;
    for (let k = 0; k < 400; k++) {
      try {
        const dir = await root.walk(['appdata', 'race']);
        const { fh } = await dir.openRead('x');
        const text = await fh.readFile('utf8');
        await fh.close();
        await dir.close();
        assert.equal(text, 'mine');
        reads++;
      } catch (e) {
        if ((e as any).name === 'AssertionError') throw e;
        refused++;
      }
    }
    stop = true;
    const swaps = await swapper;
    assert.ok(swaps > 10 && reads > 0, `swaps ${swaps}, reads ${reads}, refused ${refused}`);
  });

  it('copy and removal keep links as links and never touch what they point to', async () => {
    const top = await root.walk([]);
    const stats = await copyTree(top, 'appdata', top, 'copy');
    assert.ok(stats.files >= 4);
    assert.equal(fs.readlinkSync(path.join(vol, 'copy/next')), neighbour);
    await removeTree(top, 'copy');
    await top.close();
    assert.ok(!fs.existsSync(path.join(vol, 'copy')));
    assert.equal(fs.readFileSync(path.join(neighbour, 'x'), 'utf8'), SECRET);
    assert.ok(fs.existsSync('/etc/passwd'));
    const d = await root.walk(['appdata']);
    assert.ok((await sizeOf(d)) < 1000, 'links count their own size, not their target\'s');
    await d.close();
  });

  it('a packed folder holds links as links (never /etc content), and unpacks to the same tree', async () => {
    const d = await root.walk(['appdata']);
    const { stream, done } = packStream(d, await d.list());
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c);
    await done;
    fs.mkdirSync(path.join(vol, 'out'));
    const out = await root.walk(['out']);
    const stats = await extractInto(out, Readable.from([Buffer.concat(chunks)]), { maxBytes: 1 << 20, maxEntries: 100 }).catch((e) => e);
    await out.close();
    // The archive holds the absolute links /etc and the neighbour: extraction refuses links out.
    assert.equal(stats.name, 'ArchiveRefused', String(stats));
    assert.ok(!Buffer.concat(chunks).includes('root:x:0'), 'no /etc/passwd content');
  });

  it('refuses every hostile archive, and nothing lands outside the target', async () => {
    const marker = `h15-${process.pid}`;
    for (const a of await hostileArchives(marker)) {
      const t = path.join(vol, 'ex');
      fs.rmSync(t, { recursive: true, force: true });
      fs.mkdirSync(t);
      const dir = await root.walk(['ex']);
      const err = await extractInto(dir, Readable.from([a.data]), { maxBytes: 32 << 20, maxEntries: 200 }).then(
        () => null,
        (e) => e,
      );
      await dir.close();
      assert.ok(err && err.name === 'ArchiveRefused', `${a.why}: ${err}`);
    }
    for (const f of [path.join(vol, `${marker}-slip`), `/tmp/${marker}-deep`, `/tmp/${marker}-abs`, `/etc/${marker}-through`, `/tmp/${marker}-rel`])
      assert.ok(!fs.existsSync(f), f);
    assert.ok(!fs.readdirSync(base).some((n) => n.includes(marker)));
  });

  it('the unprivileged extraction (a child as nobody, with descriptors only) refuses the same, then the node applies the archive\'s owners', async function () {
    if (process.getuid?.() !== 0) this.skip();
    fs.chmodSync(base, 0o700); // the worker has no path to anything here: only its two descriptors
    const data = await tgz([{ name: 'd/', type: 'directory' }, { name: 'd/a.txt', body: 'alpha' }, { name: 'l', type: 'symlink', linkname: 'd/a.txt' }]);
    // The archive's owners are 0 (tar-stream's default): after the node applies them nothing is nobody's.
    fs.writeFileSync(path.join(base, 'a.tgz'), data);
    fs.mkdirSync(path.join(vol, 'unpriv'));
    const dir = await root.walk(['unpriv']);
    const fh = await fs.promises.open(path.join(base, 'a.tgz'));
    try {
      assert.deepEqual(await extractUnprivileged(dir, fh, { maxBytes: 1 << 20, maxEntries: 100 }), { entries: 3, bytes: 5 });
    } finally {
      await fh.close();
      await dir.close();
    }
    assert.equal(fs.readFileSync(path.join(vol, 'unpriv/l'), 'utf8'), 'alpha');
    for (const p of ['unpriv', 'unpriv/d', 'unpriv/d/a.txt']) assert.equal(fs.statSync(path.join(vol, p)).uid, 0, `${p}: owners applied by the node`);
    // The corpus's tar-slip archive alone (building the whole corpus, 64 MB bomb included, to take one cost ~0.2 s CPU).
    fs.writeFileSync(path.join(base, 'b.tgz'), await tgz([{ name: 'ok.txt', body: 'x' }, { name: '../h15u-slip', body: 'pwned' }]));
    fs.mkdirSync(path.join(vol, 'unpriv2'));
    const d2 = await root.walk(['unpriv2']);
    const f2 = await fs.promises.open(path.join(base, 'b.tgz'));
    await assert.rejects(extractUnprivileged(d2, f2, { maxBytes: 1 << 20, maxEntries: 100 }), (e: any) => e.name === 'ArchiveRefused');
    await f2.close();
    await d2.close();
    // What the worker made before the refusal is its own (nobody), never root's: it had no more right than that.
    const made = path.join(vol, 'unpriv2/ok.txt');
    if (fs.existsSync(made)) assert.equal(fs.statSync(made).uid, 65534);
    assert.ok(!fs.existsSync(path.join(vol, 'h15u-slip')));
  });

  it('extracts ordinary archives: folders, files, inner links, hard links, modes without set-id bits', async () => {
    const data = await tgz([
      { name: './', type: 'directory' },
      { name: 'd/', type: 'directory', mode: 0o750 },
      { name: 'd/a.txt', body: 'alpha', mode: 0o4755 },
      { name: 'd/l', type: 'symlink', linkname: 'a.txt' },
      { name: 'up', type: 'symlink', linkname: 'd/../d/a.txt' },
      { name: 'h', type: 'link', linkname: 'd/a.txt' },
    ]);
    const t = path.join(vol, 'good');
    fs.mkdirSync(t);
    const dir = await root.walk(['good']);
    const s = await extractInto(dir, Readable.from([data]), { maxBytes: 1 << 20, maxEntries: 100 });
    await dir.close();
    assert.equal(s.bytes, 5);
    assert.equal(fs.readFileSync(path.join(t, 'd/l'), 'utf8'), 'alpha');
    assert.equal(fs.statSync(path.join(t, 'h')).ino, fs.statSync(path.join(t, 'd/a.txt')).ino);
    assert.equal(fs.statSync(path.join(t, 'd/a.txt')).mode & 0o7777, 0o755);
    assert.equal(fs.statSync(path.join(t, 'd')).mode & 0o777, 0o750);
  });
});
