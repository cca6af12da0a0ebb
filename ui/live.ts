/**
 * Live data. The node's event stream (`/core/eventstream`, server-sent events, on when the operator sets
 * `node.eventStream`) pushes what happens (DOS changes, broadcast messages, app events); one EventSource is
 * shared by every page. What the node does not push (heights, peers) is polled, and an event refreshes the
 * parts it concerns at once.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { apiBase } from './base.ts';
import { ApiFailure, call } from './api.ts';
import { session } from './session.ts';

type EventFn = (data: unknown, name: string) => void;
const handlers = new Map<string, Set<EventFn>>();
let source: EventSource | null = null;
let streamState: 'connecting' | 'live' | 'off' = 'connecting';
const stateListeners = new Set<(s: typeof streamState) => void>();

function setState(s: typeof streamState) {
  streamState = s;
  for (const fn of stateListeners) fn(s);
}

function ensureSource() {
  if (source || streamState === 'off') return;
  source = new EventSource(`${apiBase}/core/eventstream`);
  source.onopen = () => setState('live');
  source.onerror = () => {
    // A 404 (stream not enabled) closes it for good; a dropped connection is retried by the browser.
    if (source?.readyState === EventSource.CLOSED) {
      source = null;
      setState('off');
    }
  };
  for (const name of handlers.keys()) listen(name);
}

const listening = new Set<string>();
function listen(name: string) {
  if (!source || listening.has(name)) return;
  listening.add(name);
  source.addEventListener(name, (e) => {
    let data: unknown;
    try {
      data = JSON.parse((e as MessageEvent).data);
    } catch {
      data = (e as MessageEvent).data;
    }
    for (const fn of handlers.get(name) ?? []) fn(data, name);
  });
}

/** Call `fn` for each event of these names while the component is mounted. */
export function useEvents(names: string[], fn: EventFn) {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    const mine: EventFn = (d, n) => ref.current(d, n);
    for (const n of names) {
      if (!handlers.has(n)) handlers.set(n, new Set());
      handlers.get(n)!.add(mine);
    }
    ensureSource();
    for (const n of names) listen(n);
    return () => {
      for (const n of names) handlers.get(n)?.delete(mine);
    };
  }, [names.join(',')]);
}

/** Whether the node's event stream is connected ('off': the node does not serve one; pages poll). */
export function useStreamState() {
  const [s, set] = useState(streamState);
  useEffect(() => {
    ensureSource();
    stateListeners.add(set);
    set(streamState);
    return () => void stateListeners.delete(set);
  }, []);
  return s;
}

export interface Loaded<T> {
  data?: T;
  error?: ApiFailure | Error;
  /** When the data was last read. */
  at?: number;
  refresh: () => void;
}

/**
 * One route's data, read now and every `everyMs` (0: once) while the page shows, and again when the session
 * changes (an admin sees more of some answers). A failed read keeps the last data and says why.
 */
export function useApi<T>(path: string | null, everyMs = 0): Loaded<T> {
  const [state, setState] = useState<Omit<Loaded<T>, 'refresh'>>({});
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => session.subscribe(() => refresh()), []);
  useEffect(() => {
    if (!path) return;
    const ctl = new AbortController();
    call<T>(path, { signal: ctl.signal }).then(
      (data) => setState({ data, at: Date.now() }),
      (error) => !ctl.signal.aborted && setState((s) => ({ ...s, error })),
    );
    const t = everyMs > 0 ? setTimeout(refresh, everyMs) : undefined;
    return () => {
      ctl.abort();
      clearTimeout(t);
    };
  }, [path, tick]);
  return { ...state, refresh };
}
