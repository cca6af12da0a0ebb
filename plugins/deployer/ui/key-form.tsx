/** The API key prompt: shown when /status answers 401 (no key yet, or a wrong one), with the reason. */
import { useState } from 'preact/hooks';

export function KeyForm({ problem, onKey }: { problem: string; onKey: (key: string) => void }) {
  const [value, setValue] = useState('');
  return (
    <section aria-labelledby="key-title">
      <h2 id="key-title">API key</h2>
      <p class="error" role="alert">
        {problem}
      </p>
      <p>
        Enter the <code>API_KEY</code> the service was started with. It is kept in this tab only (sessionStorage) and sent as{' '}
        <code>Authorization: Bearer</code>.
      </p>
      <form
        class="key-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) onKey(value.trim());
        }}
      >
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autocomplete="off" required value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
        <button type="submit">Use this key</button>
      </form>
    </section>
  );
}
