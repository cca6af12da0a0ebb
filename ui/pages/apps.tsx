/**
 * The apps installed on this node: each app's components with their state (running or not, from
 * `/apps/listrunningapps`), ports and the resources they are given. Read every 10 s; an app event of the
 * event stream (started, stopped, installed, removed, redeployed) refreshes it at once.
 */
import { Part, Section } from '../parts/show.tsx';
import { componentsOf, stateOf, type Container, type InstalledApp } from '../parts/apps.ts';
import { useApi, useEvents, useStreamState } from '../live.ts';
import { Table } from '../parts/table.tsx';

export const APP_EVENTS = ['apps.running', 'apps.stopped', 'apps.installed', 'apps.removed', 'apps.redeployed'];

export default function AppsPage() {
  const stream = useStreamState();
  const installed = useApi<InstalledApp[]>('/apps/installedapps', 10_000);
  const running = useApi<Container[]>('/apps/listrunningapps', 10_000);
  useEvents(APP_EVENTS, () => {
    installed.refresh();
    running.refresh();
  });
  return (
    <div>
      <h1>Apps</h1>
      <p class="muted">{stream === 'live' ? <span class="badge ok">Live: event stream</span> : <span class="badge">Refreshed every 10 s</span>}</p>
      <Section title="Installed on this node" id="sec-installed">
        <Part of={installed}>
          {(apps) =>
            apps.length === 0 ? (
              <p class="muted">No apps are installed on this node.</p>
            ) : (
              <Table label="Installed apps" words columns={['App', 'Component', 'State', 'Ports', 'CPU', 'Memory', 'Disk']}>
                {apps.flatMap((app) =>
                  componentsOf(app).map((c, i) => {
                    const state = stateOf(c, running.data);
                    return (
                      <tr key={c.container} data-app={app.name} data-component={c.name}>
                        <td>{i === 0 ? <a href={`#/apps/manage/${encodeURIComponent(app.name)}`}>{app.name}</a> : ''}</td>
                        <td>{c.name}</td>
                        <td class={state === 'running' ? 'ok' : 'bad'} data-field="state">
                          {state}
                        </td>
                        <td>{(c.ports ?? []).join(', ') || '–'}</td>
                        <td>{c.cpu ?? '–'}</td>
                        <td>{c.ram !== undefined ? `${c.ram} MB` : '–'}</td>
                        <td>{c.hdd !== undefined ? `${c.hdd} GB` : '–'}</td>
                      </tr>
                    );
                  }),
                )}
              </Table>
            )
          }
        </Part>
      </Section>
    </div>
  );
}
