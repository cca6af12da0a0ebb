/**
 * The peer network as this node sees it: its peers (out and in), the topology its peers report, where
 * apps run, and the broadcast messages that reach it (live from the event stream, and the last ones the
 * node kept). Every string here was written by another node or an app owner: shown as text only.
 */
import { useState } from 'preact/hooks';
import { Facts, Part, Section, text } from '../parts/show.tsx';
import { useApi, useEvents, useStreamState } from '../live.ts';
import { Table } from '../parts/table.tsx';

interface Topology {
  reporters?: number;
  knownPeers?: number;
  topology?: Record<string, { outbound?: string[]; inbound?: string[] }>;
}

interface Location {
  name: string;
  ip: string;
  hash?: string;
  broadcastedAt?: number | string;
}

interface Message {
  origin?: string;
  data?: unknown;
  type?: string;
  receivedAt?: number;
}

export default function NetworkPage() {
  const stream = useStreamState();
  const out = useApi<{ ip: string; port?: number; latency?: number }[]>('/core/connectedpeersinfo', 10_000);
  const inc = useApi<{ ip: string; port?: number; latency?: number }[]>('/core/incomingconnectionsinfo', 10_000);
  const topo = useApi<Topology>('/core/topology', 30_000);
  const locations = useApi<Location[]>('/apps/locations', 30_000);
  const health = useApi<{ status?: string; inSteadyState?: boolean; messages?: { recent?: Message[] } }>('/core/networkhealth', 15_000);
  const [live, setLive] = useState<Message[]>([]);
  useEvents(['network:broadcastmessage'], (d) => setLive((l) => [{ ...(d as Message), type: 'broadcastmessage', receivedAt: Date.now() }, ...l].slice(0, 50)));
  useEvents(['network:apprunning', 'network:appremoved', 'network:appinstalling'], () => locations.refresh());
  // The node keeps its last delivered messages (networkhealth); the live ones may be among them already.
  const kept = (Array.isArray(health.data?.messages?.recent) ? health.data!.messages!.recent! : []).filter((m) => m.type === 'broadcastmessage').reverse();
  const liveKeys = new Set(live.map((m) => `${m.origin}|${JSON.stringify(m.data)}`));
  const messages = [...live, ...kept.filter((m) => !liveKeys.has(`${m.origin}|${JSON.stringify(m.data)}`))].slice(0, 50);

  return (
    <>
      <h1>Network</h1>
      <p class="muted">{stream === 'live' ? <span class="badge ok">Live: event stream</span> : <span class="badge">Refreshed every 10-30 s</span>}</p>
      <div class="grid">
        <Section title="Peers" id="net-peers">
          <Facts
            rows={[
              ['Outgoing', out.data ? out.data.map((p) => p.ip).join(', ') || 'none' : out.error?.message ?? '…'],
              ['Incoming', inc.data ? inc.data.map((p) => p.ip).join(', ') || 'none' : inc.error?.message ?? '…'],
              ['Network state', health.data ? `${text(health.data.status)}${health.data.inSteadyState ? ' (steady)' : ''}` : health.error?.message ?? '…'],
            ]}
          />
        </Section>
        <Section title="Topology" id="net-topology">
          <Part of={topo}>
            {(t) => (
              <>
                <p>
                  {text(t.reporters)} reporting nodes, {text(t.knownPeers)} known peers.
                </p>
                <Table label="Topology" columns={['Node', 'Outbound', 'Inbound']}>
                  {Object.entries(t.topology ?? {}).map(([node, l]) => (
                    <tr key={node}>
                      <td>{node}</td>
                      <td>{(l.outbound ?? []).join(', ')}</td>
                      <td>{(l.inbound ?? []).join(', ')}</td>
                    </tr>
                  ))}
                </Table>
              </>
            )}
          </Part>
        </Section>
      </div>
      <Section title="Where apps run" id="net-locations">
        <Part of={locations}>
          {(list) =>
            list.length === 0 ? (
              <p class="muted">No app locations known.</p>
            ) : (
              <Table label="App locations" columns={['App', 'Node', 'Announced']}>
                {list.map((l) => (
                  <tr key={`${l.name}@${l.ip}`}>
                    <td>{l.name}</td>
                    <td>{l.ip}</td>
                    <td>{l.broadcastedAt ? new Date(l.broadcastedAt).toLocaleString() : '–'}</td>
                  </tr>
                ))}
              </Table>
            )
          }
        </Part>
      </Section>
      <Section title="Broadcast messages" id="net-messages">
        {messages.length === 0 ? (
          <p class="muted">No broadcast message received yet.</p>
        ) : (
          <ul class="messages" aria-live="polite">
            {messages.map((m, i) => (
              <li key={i} data-message>
                <span class="muted">{text(m.origin)}: </span>
                {typeof m.data === 'string' ? m.data : text(m.data)}
              </li>
            ))}
          </ul>
        )}
      </Section>
    </>
  );
}
