/**
 * A build log. `latest` is the running deployment's log, else the newest one; while a deployment runs it
 * is polled every second (the last 2,000 lines, `GET /logs/latest?format=json&tail=2000`) and the view
 * follows its end: the live tail. Lines are text children with ANSI escapes removed.
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { KeyRefused, getJson, stripAnsi, type LogAnswer } from './api.tsx';

const TAIL = 2000;
const LIVE_MS = 1000;
const IDLE_MS = 5000;

interface Props {
  apiKey: string;
  identifier: string;
  deploying: boolean;
  onIdentifier: (id: string) => void;
  onKeyRefused: (message: string) => void;
}

export function LogView({ apiKey, identifier, deploying, onIdentifier, onKeyRefused }: Props) {
  const [lines, setLines] = useState<string[] | null>(null);
  const [note, setNote] = useState('');
  const [follow, setFollow] = useState(true);
  const pre = useRef<HTMLPreElement>(null);
  const live = identifier === 'latest';

  useEffect(() => setLines(null), [identifier]);
  useEffect(() => {
    let stop = false;
    let timer: ReturnType<typeof setTimeout>;
    const load = async () => {
      try {
        const a = await getJson<LogAnswer>(`/logs/${encodeURIComponent(identifier)}?format=json&tail=${TAIL}`, apiKey);
        if (stop) return;
        if (a.status === 404) {
          setLines([]);
          setNote(live ? 'No build log yet: none deployed.' : `No build log for ${identifier}.`);
        } else {
          setLines(a.body.lines.map(stripAnsi));
          setNote(a.body.line_count >= TAIL ? `The last ${TAIL} lines of ${a.body.log_file}.` : '');
        }
      } catch (e) {
        if (stop) return;
        if (e instanceof KeyRefused) return onKeyRefused(e.message);
        setNote(`The log could not be read: ${(e as Error).message}`);
      }
      // Only `latest` changes: fast while a deployment writes it, slow otherwise (to see the next one start).
      if (live && follow) timer = setTimeout(load, deploying ? LIVE_MS : IDLE_MS);
    };
    void load();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [apiKey, identifier, deploying, follow]);

  // The end of a log is what explains it (a failure's last lines): a log opens at its end, and a followed
  // one stays there as it grows.
  useLayoutEffect(() => {
    if ((follow || !live) && pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [lines]);

  return (
    <section aria-labelledby="log-title">
      <h2 id="log-title">Build log: {live ? (deploying ? 'running deployment' : 'newest deployment') : identifier}</h2>
      <div class="log-controls">
        {live ? (
          <label>
            <input type="checkbox" checked={follow} onChange={(e) => setFollow((e.target as HTMLInputElement).checked)} /> Follow live
          </label>
        ) : (
          <button type="button" onClick={() => onIdentifier('latest')}>
            Back to the newest log
          </button>
        )}
        {live && deploying && follow && (
          <span class="badge deploying" role="status">
            live
          </span>
        )}
      </div>
      {note && <p class="note">{note}</p>}
      <pre ref={pre} class="log" tabIndex={0} aria-label="Build log lines">
        {lines === null ? 'Loading…' : lines.join('\n')}
      </pre>
    </section>
  );
}
