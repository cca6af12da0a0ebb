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

/**
 * xterm writes its theme and cell sizes into <style> elements it creates, which the page's policy
 * (style-src 'self') blocks. While `run` opens the terminal, a <style> asked of the document is an inert
 * <template> whose text goes into a constructed stylesheet adopted by the document instead (CSSOM, which
 * the policy allows); removing the element drops the sheet.
 */
function withAdoptedStyles(run: () => void) {
  const doc = document;
  const create = doc.createElement;
  doc.createElement = function (this: Document, tag: string, opts?: ElementCreationOptions) {
    if (String(tag).toLowerCase() !== 'style') return create.call(this, tag, opts);
    const el = create.call(this, 'template', opts);
    const sheet = new CSSStyleSheet();
    let text = '';
    doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
    Object.defineProperty(el, 'textContent', {
      get: () => text,
      set: (v: string) => {
        text = String(v ?? '');
        sheet.replaceSync(text);
      },
    });
    el.remove = () => {
      Element.prototype.remove.call(el);
      doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((x) => x !== sheet);
    };
    return el;
  } as typeof doc.createElement;
  try {
    run();
  } finally {
    doc.createElement = create;
  }
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
    withAdoptedStyles(() => term.open(el));
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
