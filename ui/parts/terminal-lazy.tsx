/** A button that loads the terminal (and xterm with it) only when asked, then shows it; closing drops it. */
import type { ComponentType } from 'preact';
import { useState } from 'preact/hooks';

export function TerminalOpener({ target }: { target: string }) {
  const [T, setT] = useState<ComponentType<{ target: string }> | null>(null);
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function show() {
    setOpen(true);
    if (T) return;
    try {
      const m = await import('./terminal.tsx');
      setT(() => m.default);
    } catch (e) {
      setError((e as Error).message);
    }
  }
  return (
    <div>
      <button type="button" aria-expanded={open} onClick={() => (open ? setOpen(false) : show())}>
        {open ? 'Close terminal' : `Open terminal in ${target}`}
      </button>
      {error && <p class="bad">{error}</p>}
      {open && T && <T target={target} />}
    </div>
  );
}
