/** Status, health and releases: every value from the service is a text child (Preact escapes it). */
import type { ComponentChildren } from 'preact';
import type { Health, Release, Status } from './api.tsx';

const when = (iso: string | undefined) => {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
};
const seconds = (n: number | undefined) => (n === undefined ? '—' : n < 120 ? `${n} s` : `${Math.floor(n / 60)} min ${n % 60} s`);

function Field({ name, children }: { name: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <dt>{name}</dt>
      <dd>{children}</dd>
    </div>
  );
}

export function StatusPanel({ status: s, onLog }: { status: Status; onLog: (id: string) => void }) {
  const last = s.last_deployment;
  const failed = s.last_failed_deployment;
  return (
    <section aria-labelledby="status-title">
      <h2 id="status-title">
        Status: <span class={`badge ${s.status}`}>{s.status}</span>
      </h2>
      {s.status === 'deploying' ? (
        <dl>
          <Field name="Stage">{s.stage}</Field>
          <Field name="Commit">
            <code>{s.commit}</code>
          </Field>
          <Field name="Rolls back to">
            <code>{s.rollback_commit || '—'}</code>
          </Field>
          <Field name="Running for">
            {seconds(s.duration_seconds)} of at most {seconds(s.timeout_seconds)}
          </Field>
          <div class="field wide">
            <dt>Time used</dt>
            <dd>
              <progress max={100} value={s.progress_percent ?? 0} aria-label="Share of the deployment timeout used">
                {s.progress_percent}%
              </progress>
            </dd>
          </div>
        </dl>
      ) : (
        <dl>
          <Field name="Current release">
            <code>{s.current_release || 'none yet'}</code>
          </Field>
          <Field name="Last deployment">
            {last && last.build_status !== 'none' ? (
              <>
                <code>{last.commit || '—'}</code> {last.build_status} {when(last.updated_at)}, {seconds(last.build_duration_seconds)}
                {last.reason ? ` (${last.reason})` : ''}
              </>
            ) : (
              'none yet'
            )}
          </Field>
        </dl>
      )}
      {s.queue?.pending && (
        <p>
          Waiting to deploy next: <code>{s.queue.pending.commit || 'the branch head'}</code> (received {when(s.queue.pending.received_at)})
        </p>
      )}
      {failed && (
        <div class="failed">
          <h3>Last failed deployment</h3>
          <p>
            <code>{failed.commit || '—'}</code> failed {when(failed.failed_at)}: {failed.reason}. Failed deployments so far: {s.failed_commits_count ?? 1}.{' '}
            {failed.log && (
              <button type="button" class="link" onClick={() => onLog(failed.log!)}>
                Show its build log
              </button>
            )}
          </p>
        </div>
      )}
    </section>
  );
}

export function HealthPanel({ health: h }: { health: Health }) {
  return (
    <section aria-labelledby="health-title">
      <h2 id="health-title">
        Health: <span class={`badge ${h.healthy ? 'ok' : 'bad'}`}>{h.healthy ? 'healthy' : 'unhealthy'}</span>
      </h2>
      <dl>
        <Field name="App">
          {h.app_status} on port {h.app_port}
        </Field>
        <Field name="Supervisor">{h.supervisor_status}</Field>
        <Field name="Deployment">{h.deployment_in_progress ? `in progress: ${h.deployment_stage}` : 'none running'}</Field>
      </dl>
    </section>
  );
}

export function ReleasesPanel({ releases, current, onLog }: { releases: Release[]; current: string; onLog: (id: string) => void }) {
  return (
    <section aria-labelledby="releases-title">
      <h2 id="releases-title">Releases</h2>
      {releases.length === 0 ? (
        <p>No release yet: push to the branch, or send a webhook.</p>
      ) : (
        <div class="scroll" tabIndex={0} role="region" aria-label="Releases table">
          <table>
            <thead>
              <tr>
                <th scope="col">Release</th>
                <th scope="col">Commit message</th>
                <th scope="col">Build</th>
                <th scope="col">Deployed</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {releases.map((r) => (
                <tr key={r.id} class={r.id === current ? 'current' : ''}>
                  <td>
                    <code title={r.commit}>{r.id.split('-')[0]}-{r.commit.slice(0, 7)}</code>
                    {r.id === current && <span class="badge ok">live</span>}
                  </td>
                  <td class="message">{r.commit_message}</td>
                  <td>{seconds(r.build_duration_seconds)}</td>
                  <td>{when(r.deployed_at)}</td>
                  <td>
                    <button type="button" class="link" onClick={() => onLog(r.id)} aria-label={`Build log of release ${r.id.split('-')[0]}`}>
                      Build log
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
