/**
 * A component's log: the newest lines (`/apps/applogpolling`), and with "Follow" the lines written since,
 * asked every 2 s with the answer's `sinceTimestamp`. Logs are written by the app, so by anyone: ANSI escapes
 * and other control characters are removed and every line is a text node, never markup.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { call } from '../api.ts';

const FIRST = 200;
const KEEP = 2000;
const FOLLOW_MS = 2000;

// CSI sequences (colours, cursor moves), OSC sequences (titles, links), then any other C0 control but tab.
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]/g;
export const stripAnsi = (s: string) => s.replace(ANSI, '');

interface Polled {
  logs: string[];
  sinceTimestamp?: string;
}

export function Log({ target }: { target: string }) {
  const [lines, setLines] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [follow, setFollow] = useState(true);
  const since = useRef<string | undefined>(undefined);
  const box = useRef<HTMLPreElement>(null);
  const base = `/apps/applogpolling/${encodeURIComponent(target)}`;

  useEffect(() => {
    let stop = false;
    since.current = undefined;
    setLines([]);
    call<Polled>(`${base}?lineCount=${FIRST}`).then(
      (d) => {
        if (stop) return;
        since.current = d.sinceTimestamp;
        setLines(d.logs.map(stripAnsi));
        setError(null);
      },
      (e) => !stop && setError((e as Error).message),
    );
    return () => void (stop = true);
  }, [target]);

  useEffect(() => {
    if (!follow) return;
    let stop = false;
    let timer: ReturnType<typeof setTimeout>;
    const next = async () => {
      try {
        // Until the first read answered there is no time to ask from (that read brings the lines).
        if (!since.current) throw null;
        const d = await call<Polled>(`${base}?lineCount=${KEEP}&since=${encodeURIComponent(since.current)}`);
        if (stop) return;
        if (d.sinceTimestamp) since.current = d.sinceTimestamp;
        if (d.logs.length) setLines((l) => [...l, ...d.logs.map(stripAnsi)].slice(-KEEP));
        setError(null);
      } catch (e) {
        if (!stop && e) setError((e as Error).message);
      }
      if (!stop) timer = setTimeout(next, FOLLOW_MS);
    };
    timer = setTimeout(next, FOLLOW_MS);
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [target, follow]);

  useEffect(() => {
    const el = box.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);

  return (
    <div>
      <label class="inline">
        <input type="checkbox" checked={follow} onChange={(e) => setFollow((e.target as HTMLInputElement).checked)} /> Follow
      </label>
      {error && <p class="bad">Log not available: {error}</p>}
      <pre class="log" ref={box} tabIndex={0} aria-label={`Log of ${target}`} data-log={target}>
        {lines.map((l, i) => (
          <div key={i}>{l}</div>
        ))}
      </pre>
    </div>
  );
}
