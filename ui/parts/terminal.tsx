/**
 * A terminal in an app's container: xterm.js over the node's websocket `/ws/apps/exec/<component>`. Frames
 * are JSON text both ways: the page sends `{type: input, data}` and `{type: resize, cols, rows}`, the node
 * answers `ready`, `output`, `exit` and `error`. A browser cannot set the session header on a websocket,
 * so the session goes as subprotocols (`legacyidauth`, the header base64url-encoded), which the node reads.
 * Loaded by a dynamic import when opened: xterm weighs on no page that does not show a terminal.
 */
import { Terminal } from '@xterm/xterm';
import { useEffect, useRef, useState } from 'preact/hooks';
import { wsUrl } from '../api.ts';
import { session } from '../session.ts';

function protocols(): string[] {
  const s = session.get();
  if (!s) return [];
  const bytes = new TextEncoder().encode(s.header);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return ['legacyidauth', btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')];
}

/** Columns and rows that fit the element at xterm's cell size (no fit addon: one division). */
function fit(term: Terminal, el: HTMLElement) {
  const cell = el.querySelector<HTMLElement>('.xterm-rows > div');
  const h = cell?.getBoundingClientRect().height || 17;
  const w = (cell?.getBoundingClientRect().width || 0) / Math.max(term.cols, 1) || 9;
  const cols = Math.max(20, Math.floor(el.clientWidth / w));
  const rows = Math.max(5, Math.floor(el.clientHeight / h));
  if (cols !== term.cols || rows !== term.rows) term.resize(cols, rows);
}

export default function AppTerminal({ target }: { target: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [state, setState] = useState('Connecting…');
  useEffect(() => {
    const el = box.current!;
    const term = new Terminal({ convertEol: false, cursorBlink: true, fontSize: 14, scrollback: 2000, screenReaderMode: true });
    term.open(el);
    const ws = new WebSocket(wsUrl(`/ws/apps/exec/${encodeURIComponent(target)}`), protocols());
    const send = (f: unknown) => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify(f));
    const resize = () => {
      fit(term, el);
      send({ type: 'resize', cols: term.cols, rows: term.rows });
    };
    ws.onmessage = (e) => {
      let f: { type?: string; data?: string; code?: number; message?: string };
      try {
        f = JSON.parse(String(e.data));
      } catch {
        return;
      }
      if (f.type === 'ready') {
        setState('Connected');
        resize();
        term.focus();
      } else if (f.type === 'output' && typeof f.data === 'string') term.write(f.data);
      else if (f.type === 'exit') setState(`The shell ended (exit code ${f.code})`);
      else if (f.type === 'error') setState(`Error: ${f.message}`);
    };
    ws.onclose = (e) => setState((s) => (s.startsWith('The shell') || s.startsWith('Error') ? s : e.code === 1006 ? 'Refused or disconnected' : 'Closed'));
    const input = term.onData((data) => send({ type: 'input', data }));
    const onResize = () => resize();
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      input.dispose();
      ws.close();
      term.dispose();
    };
  }, [target]);
  return (
    <div>
      <p role="status" data-terminal-state>
        {state}
      </p>
      <div class="terminal" ref={box} data-terminal={target} />
    </div>
  );
}
