/**
 * The node: version, uptime, fitness checks (and what a failing one blocks), daemon and explorer heights
 * and sync, benchmark status and tier, DOS state, peers in and out with round-trip times, resources; and
 * the operator's actions, each behind a confirmation, shown only to a session whose level allows them.
 * Heights and peers are read every 5 s; a DOS change arrives at once from the event stream.
 */
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { useSession } from '../app.tsx';
import { ConfirmAction } from '../parts/confirm.tsx';
import { Facts, Part, Section, duration, text } from '../parts/show.tsx';
import { useApi, useEvents, useStreamState, type Loaded } from '../live.ts';
import { allows, type Level } from '../session.ts';
import { Table } from '../parts/table.tsx';

const EVERY = 5000;

interface Check {
  name: string;
  ok: boolean;
  required: boolean;
  message?: string;
}

/** What a failing check stops, as the checks' plugins decide (a required one refuses login phrases). */
function blocks(c: Check): string {
  if (c.ok) return '–';
  if (c.required) return c.name === 'dos' ? 'Login phrases (the node is banned by its DOS counter); only the emergency phrase logs in' : 'Login phrases: only the operator and the core team log in (emergency phrase)';
  return 'Nothing: reported only';
}

interface PeerInfo {
  ip: string;
  port?: number;
  latency?: number;
  lastPingTime?: number;
}

function Peers({ of, label }: { of: Loaded<PeerInfo[]>; label: string }) {
  return (
    <Part of={of}>
      {(list) =>
        list.length === 0 ? (
          <p class="muted">No {label.toLowerCase()} peers.</p>
        ) : (
          <Table label={`${label} peers`} columns={['Address', 'Round trip']}>
            {list.map((p) => (
              <tr key={`${p.ip}:${p.port}`}>
                <td>{p.port ? `${p.ip}:${p.port}` : p.ip}</td>
                <td>{typeof p.latency === 'number' && p.latency >= 0 ? `${Math.round(p.latency)} ms` : '–'}</td>
              </tr>
            ))}
          </Table>
        )
      }
    </Part>
  );
}

function Sync({ have, of }: { have?: number; of?: number }): ComponentChildren {
  if (typeof have !== 'number' || typeof of !== 'number') return '–';
  return have >= of ? <span class="ok">in sync</span> : <span class="bad">{of - have} behind</span>;
}

interface AdminAction {
  label: string;
  path: string;
  level: Level;
  explain: string;
}

const ACTIONS: AdminAction[] = [
  { label: 'Restart daemon', path: '/core/restartdaemon', level: 'admin', explain: 'Stops the blockchain daemon and starts it again. The chain routes answer errors until it is back.' },
  { label: 'Restart benchmark', path: '/core/restartbenchmark', level: 'adminandcoreteam', explain: 'Restarts the benchmark daemon; the benchmarks run again.' },
  { label: 'Restart explorer', path: '/explorer/restart', level: 'adminandcoreteam', explain: 'Restarts the explorer’s block processing.' },
  { label: 'Update node software', path: '/core/softupdatecore', level: 'adminandcoreteam', explain: 'Pulls the newest node software (fast-forward) and restarts the node. The page reconnects when it is back.' },
  { label: 'Restart node', path: '/core/restart', level: 'adminandcoreteam', explain: 'Restarts the node software gracefully. Running requests finish first.' },
];

export default function NodePage() {
  const s = useSession();
  const privilege = s?.privilege ?? 'none';
  const stream = useStreamState();
  const version = useApi<string>('/core/version');
  const uptime = useApi<number>('/core/uptime', EVERY);
  const sysUptime = useApi<number>('/core/systemuptime', 60_000);
  const health = useApi<{ healthy: boolean; checks: Check[] }>('/core/health', EVERY);
  const chain = useApi<{ blocks: number; headers: number; chain: string; verificationprogress?: number }>('/daemon/getblockchaininfo', EVERY);
  const scanned = useApi<{ generalScannedHeight: number }>('/explorer/scannedheight', EVERY);
  const bench = useApi<Record<string, unknown>>('/benchmark/getstatus', 30_000);
  const benchmarks = useApi<Record<string, unknown>>('/benchmark/getbenchmarks', 60_000);
  const tier = useApi<string>('/core/nodetier', 60_000);
  const dos = useApi<{ dosState: number; dosMessage: string | null }>('/core/dosstate', 30_000);
  const out = useApi<PeerInfo[]>('/core/connectedpeersinfo', EVERY);
  const inc = useApi<PeerInfo[]>('/core/incomingconnectionsinfo', EVERY);
  useEvents(['dos:changed'], () => dos.refresh());
  const actions = ACTIONS.filter((a) => allows(a.level, privilege));
  const live = chain.data !== undefined || health.data !== undefined;
  // A user-timing mark when the node's data first shows (npm run bench:ui reads it).
  useEffect(() => {
    if (live && performance.getEntriesByName('corenode:live').length === 0) performance.mark('corenode:live');
  }, [live]);

  return (
    <div data-live={live ? 'true' : 'false'}>
      <h1>Node</h1>
      <p class="muted">
        {stream === 'live' ? <span class="badge ok">Live: event stream</span> : <span class="badge">Refreshed every 5 s</span>}
      </p>
      <div class="grid three">
        <Section title="Software" id="sec-software">
          <Facts
            rows={[
              ['Version', <span data-field="version">{text(version.data)}</span>],
              ['Node uptime', typeof uptime.data === 'number' ? duration(uptime.data) : '–'],
              ['System uptime', typeof sysUptime.data === 'number' ? duration(sysUptime.data / 1000) : '–'],
            ]}
          />
        </Section>
        <Section title="Chain" id="sec-chain">
          <Facts
            rows={[
              ['Daemon height', <span data-field="daemon-height">{chain.data ? chain.data.blocks : chain.error ? chain.error.message : '…'}</span>],
              ['Headers', text(chain.data?.headers)],
              ['Daemon sync', <Sync have={chain.data?.blocks} of={chain.data?.headers} />],
              ['Explorer height', <span data-field="explorer-height">{scanned.data ? scanned.data.generalScannedHeight : scanned.error ? scanned.error.message : '…'}</span>],
              ['Explorer sync', <Sync have={scanned.data?.generalScannedHeight} of={chain.data?.blocks} />],
            ]}
          />
        </Section>
        <Section title="Benchmark" id="sec-bench">
          <Facts
            rows={[
              ['Status', bench.data ? text(bench.data.status) : bench.error ? bench.error.message : '…'],
              ['Benchmarking', text(bench.data?.benchmarking)],
              ['Tier', tier.data ? text(tier.data) : tier.error ? tier.error.message : '…'],
            ]}
          />
        </Section>
        <Section title="DOS state" id="sec-dos">
          <Part of={dos}>
            {(d) => (
              <Facts
                rows={[
                  ['Counter', <span data-field="dos" class={d.dosState >= 10 ? 'bad' : 'ok'}>{d.dosState} of 10</span>],
                  ['Message', text(d.dosMessage)],
                ]}
              />
            )}
          </Part>
        </Section>
        <Section title="Resources" id="sec-resources">
          <Part of={benchmarks}>
            {(b) => (
              <Facts
                rows={[
                  ['CPU cores', text(b.cores)],
                  ['Memory (GB)', text(b.ram)],
                  ['Disk (GB)', text(b.ssd ?? b.hdd)],
                  ['Disk write (MB/s)', text(b.ddwrite)],
                  ['Events per second', text(b.eps)],
                ]}
              />
            )}
          </Part>
        </Section>
      </div>
      <Section title="Health checks" id="sec-health">
        <Part of={health}>
          {(h) => (
            <>
              <p>
                {h.healthy ? <span class="ok">Healthy</span> : <span class="bad">Unhealthy: login phrases are refused</span>}
              </p>
              <Table label="Health checks" columns={['Check', 'State', 'Required', 'If it fails, it blocks', 'Message']}>
                {h.checks.map((c) => (
                  <tr key={c.name} data-check={c.name}>
                    <td>{c.name}</td>
                    <td class={c.ok ? 'ok' : 'bad'}>{c.ok ? 'ok' : 'failing'}</td>
                    <td>{c.required ? 'yes' : 'no'}</td>
                    <td>{blocks(c)}</td>
                    <td>{text(c.message)}</td>
                  </tr>
                ))}
              </Table>
            </>
          )}
        </Part>
      </Section>
      <div class="grid">
        <Section title="Outgoing peers" id="sec-out">
          <Peers of={out} label="Outgoing" />
        </Section>
        <Section title="Incoming peers" id="sec-in">
          <Peers of={inc} label="Incoming" />
        </Section>
      </div>
      {actions.length > 0 && (
        <Section title="Operator actions" id="sec-admin">
          {actions.map((a) => (
            <ConfirmAction key={a.path} label={a.label} explain={a.explain} path={a.path} />
          ))}
        </Section>
      )}
    </div>
  );
}
