/**
 * The deployment trigger's page: asks for the API key when the service wants one, then shows status,
 * health, releases and build logs, polling the same routes scripts call (/status and /health every 2 s).
 */
import { render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { KeyRefused, getJson, storeKey, storedKey, type Health, type Status } from './api.tsx';
import { KeyForm } from './key-form.tsx';
import { LogView } from './log-view.tsx';
import { HealthPanel, ReleasesPanel, StatusPanel } from './panels.tsx';

const POLL_MS = 2000;

function App() {
  const [key, setKey] = useState(storedKey());
  /** Null while the key works (or none is needed); else why the key form shows. */
  const [keyProblem, setKeyProblem] = useState<string | null>(null);
  const [status, setStatus] = useState<Status | null>(null);
  /** The last idle status: a deploying one carries no releases, and the table should not vanish meanwhile. */
  const [idle, setIdle] = useState<Status | null>(null);
  const [health, setHealth] = useState<Health | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [logId, setLogId] = useState('latest');

  useEffect(() => {
    if (keyProblem) return;
    let stop = false;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      try {
        const [s, h] = await Promise.all([getJson<Status>('/status', key), getJson<Health>('/health', key)]);
        if (stop) return;
        setStatus(s.body);
        if (s.body.status === 'idle') setIdle(s.body);
        setHealth(h.body);
        setError(null);
      } catch (e) {
        if (stop) return;
        if (e instanceof KeyRefused) {
          setKeyProblem(key ? `The service refused this API key (${e.message}).` : 'This service needs its API key.');
          return;
        }
        setError(`Cannot reach the service: ${(e as Error).message}`);
      }
      timer = setTimeout(poll, POLL_MS);
    };
    void poll();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [key, keyProblem]);

  const useKey = useCallback((k: string) => {
    storeKey(k);
    setKey(k);
    setKeyProblem(null);
  }, []);
  const forget = () => {
    storeKey('');
    setKey('');
    setStatus(null);
    setKeyProblem('The key was removed from this tab.');
  };

  return (
    <>
      <header>
        <h1>Deployment trigger</h1>
        {key && !keyProblem && (
          <button type="button" class="quiet" onClick={forget}>
            Forget API key
          </button>
        )}
      </header>
      <main>
        {keyProblem ? (
          <KeyForm problem={keyProblem} onKey={useKey} />
        ) : (
          <>
            {error && (
              <p class="error" role="alert">
                {error}
              </p>
            )}
            {!status && !error && <p>Loading status…</p>}
            {status && <StatusPanel status={status} onLog={setLogId} />}
            {health && <HealthPanel health={health} />}
            {idle && <ReleasesPanel releases={idle.releases ?? []} current={idle.current_release ?? ''} onLog={setLogId} />}
            {status && <LogView apiKey={key} identifier={logId} deploying={status.status === 'deploying'} onIdentifier={setLogId} onKeyRefused={(m) => setKeyProblem(`The service refused this API key (${m}).`)} />}
          </>
        )}
      </main>
    </>
  );
}

const root = document.getElementById('app')!;
root.textContent = ''; // the static "Loading…": render() adds to a container, it does not replace it
render(<App />, root);
