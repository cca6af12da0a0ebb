/**
 * Parts with a large library, each loaded by a dynamic import when shown, so the app's page itself stays small.
 * A button that loads the terminal (and xterm with it) only when asked, then shows it; closing drops it. */
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';

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

/** The charts of a component, loaded (with uPlot) when the page shows them. */
export function LazyCharts({ target }: { target: string }) {
  const [C, setC] = useState<ComponentType<{ target: string }> | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    import('./charts.tsx').then(
      (m) => setC(() => m.default),
      (e) => setError((e as Error).message),
    );
  }, []);
  if (error) return <p class="bad">{error}</p>;
  return C ? <C target={target} /> : <p class="muted">Loading…</p>;
}
