/**
 * One installed app: its components, their state, ports and resources; the lifecycle actions (start, stop,
 * restart, redeploy, remove), each behind a confirmation and shown only to the app's owner and the core team
 * (the routes' level, appownerabove; the node refuses anyone else anyway); each component's CPU, memory and
 * network charts, log with follow and terminal (loaded when opened).
 */
import { Facts, Part, Section } from '../parts/show.tsx';
import { ConfirmAction } from '../parts/confirm.tsx';
import { Log } from '../parts/log.tsx';
import { LazyCharts, TerminalOpener } from '../parts/lazy.tsx';
import { componentsOf, mayManage, stateOf, type Container, type InstalledApp } from '../parts/apps.ts';
import { callProgress } from '../api.ts';
import { useApi, useEvents } from '../live.ts';
import { useSession } from '../app.tsx';
import type { PageProps } from '../pages.ts';
import { APP_EVENTS } from './apps.tsx';
import { Table } from '../parts/table.tsx';

export default function AppPage({ params }: PageProps) {
  const name = params.name;
  const s = useSession();
  const installed = useApi<InstalledApp[]>(`/apps/installedapps/${encodeURIComponent(name)}`, 10_000);
  const running = useApi<Container[]>('/apps/listrunningapps', 5_000);
  const refresh = () => {
    installed.refresh();
    running.refresh();
  };
  useEvents(APP_EVENTS, (d) => (d as { app?: string })?.app === name && refresh());
  const n = encodeURIComponent(name);
  return (
    <div>
      <h1>App {name}</h1>
      <Part of={installed}>
        {(list) => {
          const app = list.find((a) => a.name === name);
          if (!app) return <p class="bad">No app {name} is installed on this node.</p>;
          const comps = componentsOf(app);
          return (
            <>
              <Section title="Specification" id="sec-spec">
                <Facts
                  rows={[
                    ['Owner', <span class="phrase">{app.owner}</span>],
                    ['Description', app.description ?? '–'],
                    ['Specification version', String(app.version)],
                    ['Installed', app.installedAt ? new Date(app.installedAt).toLocaleString() : '–'],
                  ]}
                />
              </Section>
              <Section title="Components" id="sec-components">
                <Table label="Components" words columns={['Component', 'Image', 'State', 'Ports', 'CPU', 'Memory', 'Disk']}>
                  {comps.map((c) => {
                    const state = stateOf(c, running.data);
                    return (
                      <tr key={c.container} data-component={c.name}>
                        <td>{c.name}</td>
                        <td>{c.repotag}</td>
                        <td class={state === 'running' ? 'ok' : 'bad'} data-field="state">
                          {state}
                        </td>
                        <td>{(c.ports ?? []).join(', ') || '–'}</td>
                        <td>{c.cpu ?? '–'}</td>
                        <td>{c.ram !== undefined ? `${c.ram} MB` : '–'}</td>
                        <td>{c.hdd !== undefined ? `${c.hdd} GB` : '–'}</td>
                      </tr>
                    );
                  })}
                </Table>
              </Section>
              {mayManage(app, s) && (
                <Section title="Actions" id="sec-lifecycle">
                  <ConfirmAction label="Start" path={`/apps/appstart/${n}`} explain={`Starts every component of ${name}.`} onDone={refresh} />
                  <ConfirmAction label="Stop" path={`/apps/appstop/${n}`} explain={`Stops every component of ${name}; it stays stopped until started.`} onDone={refresh} />
                  <ConfirmAction label="Restart" path={`/apps/apprestart/${n}`} explain={`Restarts every component of ${name}.`} onDone={refresh} />
                  <ConfirmAction label="Redeploy" path={`/apps/redeploy/${n}`} run={() => callProgress(`/apps/redeploy/${n}`)} explain={`Removes the containers of ${name} and creates them again from the image; the volumes stay.`} onDone={refresh} />
                  <ConfirmAction label="Remove" path={`/apps/appremove/${n}`} run={() => callProgress(`/apps/appremove/${n}`)} explain={`Removes ${name} from this node with its containers, volumes and data.`} onDone={refresh} />
                </Section>
              )}
              {mayManage(app, s) &&
                comps.map((c) => (
                  <Section key={c.target} title={`Component ${c.name}`} id={`sec-comp-${c.name}`}>
                    <h3>Resources, last hour</h3>
                    <LazyCharts target={c.target} />
                    <h3>Log</h3>
                    <Log target={c.target} />
                    <h3>Terminal</h3>
                    <TerminalOpener target={c.target} />
                  </Section>
                ))}
            </>
          );
        }}
      </Part>
    </div>
  );
}
