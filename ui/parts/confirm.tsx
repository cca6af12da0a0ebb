/**
 * An action behind a confirmation: a button that opens a modal dialog (the native <dialog>, which keeps
 * the keyboard focus inside and closes on Escape) saying what will happen; only "Yes" calls the route.
 */
import { useRef, useState } from 'preact/hooks';
import { call } from '../api.ts';

export interface ActionProps {
  label: string;
  /** What the dialog says will happen. */
  explain: string;
  path: string;
  method?: 'GET' | 'POST';
  /** How to call it, when not `call(path)` (a route answering a progress stream). */
  run?: () => Promise<unknown>;
  onDone?: (data: unknown) => void;
}

export function ConfirmAction({ label, explain, path, method = 'GET', run: runIt, onDone }: ActionProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const id = `confirm-${path.replace(/[^a-z0-9]/gi, '-')}`;
  async function run() {
    dialog.current?.close();
    setBusy(true);
    setStatus(null);
    try {
      const data = runIt ? await runIt() : await call(path, { method });
      const message = (data as { message?: unknown } | null)?.message;
      setStatus({ ok: true, text: typeof data === 'string' ? data : typeof message === 'string' ? message : 'Done' });
      onDone?.(data);
    } catch (e) {
      setStatus({ ok: false, text: (e as Error).message });
    } finally {
      setBusy(false);
    }
  }
  return (
    <div class="action">
      <button type="button" data-admin-action={path} disabled={busy} onClick={() => dialog.current?.showModal()}>
        {busy ? `${label}…` : label}
      </button>
      {status && (
        <span role="status" class={status.ok ? 'ok' : 'bad'}>
          {status.text}
        </span>
      )}
      <dialog ref={dialog} aria-labelledby={`${id}-title`} aria-describedby={`${id}-text`}>
        <h2 id={`${id}-title`}>{label}?</h2>
        <p id={`${id}-text`}>{explain}</p>
        <div class="buttons">
          <button type="button" onClick={() => dialog.current?.close()} autofocus>
            Cancel
          </button>
          <button type="button" class="danger" onClick={run}>
            Yes, {label.toLowerCase()}
          </button>
        </div>
      </dialog>
    </div>
  );
}
