/**
 * The streamed log answer without Docker: Docker's multiplexed frames split anywhere across chunks, UTF-8
 * characters split across chunks, and the envelope equal to JSON.stringify of the whole text.
 */
import assert from 'node:assert/strict';
import { PassThrough, Readable } from 'node:stream';
import { Demux, logEnvelope, newestLines, TextEnvelope } from '../../plugins/apps/logstream.ts';

const frame = (kind: number, text: string) => {
  const body = Buffer.from(text, 'utf8');
  const h = Buffer.alloc(8);
  h[0] = kind;
  h.writeUInt32BE(body.length, 4);
  return Buffer.concat([h, body]);
};

async function through(chunks: Buffer[], tty: boolean) {
  const demux = new Demux(tty);
  const env = new TextEnvelope();
  Readable.from(chunks).pipe(demux).pipe(env);
  let out = '';
  for await (const b of env) out += b.toString();
  return { out, demux };
}

const bytes = (b: Buffer, size: number) => Array.from({ length: Math.ceil(b.length / size) }, (_, i) => b.subarray(i * size, (i + 1) * size));

describe('apps: the streamed log answer', () => {
  const text = ['out "one"\n', 'err\tzwei – ü\n', 'drei 🚀 \\ \u0001\n', ''];
  const raw = Buffer.concat([frame(1, text[0]), frame(2, text[1]), frame(1, text[2]), frame(1, text[3])]);

  for (const size of [1, 3, 7, 8, 9, 1000])
    it(`frames and characters split every ${size} bytes: the envelope of the whole text`, async () => {
      const { out, demux } = await through(bytes(raw, size), false);
      assert.equal(out, JSON.stringify({ status: 'success', data: text.join('') }));
      assert.equal(demux.stderr, Buffer.byteLength(text[1]));
    });

  it('a TTY log passes through; an empty log is an empty text', async () => {
    assert.equal((await through(bytes(Buffer.from('a\u00e9b\n'), 1), true)).out, '{"status":"success","data":"aéb\\n"}');
    assert.equal((await through([], false)).out, '{"status":"success","data":""}');
  });

  const lines = (text: string, max: number, size = 3) => newestLines(Readable.from(bytes(frame(1, text), size)) as any, false, max);

  it('a poll keeps the newest lines that fit its bound in characters, and says what it cut', async () => {
    assert.deepEqual(await lines('aaaa\nbbbb\ncccc\n', 100), { lines: ['aaaa', 'bbbb', 'cccc'], cut: false });
    assert.deepEqual(await lines('aaaa\nbbbb\n\ncccc', 10), { lines: ['bbbb', 'cccc'], cut: true });
    // One line over the bound keeps its start (its timestamp).
    assert.deepEqual(await lines(`2026 ${'z'.repeat(40)}\n`, 10, 7), { lines: ['2026 zzzzz'], cut: true });
  });

  it('an answer whose reader takes nothing is cut after the stall time, and lets go of Docker\'s answer', async () => {
    const docker = new PassThrough();
    const out = logEnvelope(docker as any, true, 200);
    docker.write(Buffer.alloc(1 << 20, 'a')); // more than the buffers between take; nobody reads
    const closed = await new Promise<Error | undefined>((resolve) => out.once('close', () => resolve((out as any).errored)));
    assert.match(String(closed), /no progress for 200 ms/);
    assert.ok(docker.destroyed);
  });
});
