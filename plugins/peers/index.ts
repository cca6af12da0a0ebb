/**
 * The peer network (issue 17): this node's key pair, its links to other nodes over `/ws/core`, broadcast
 * of signed messages (app notices, registrations, the network policy, broadcastmessage), and the routes
 * that show and change the peers. The protocol itself is in protocol/ (transport-independent).
 */
import path from 'node:path';
import { coreServices, definePlugin, optional, websocket, type Collection } from '../../core/plugin-api.ts';
import { appsService, carriesRepoauth, REPOAUTH_IS_PUBLIC } from '../apps/api.ts';
import { daemonControlService, daemonService } from '../daemon/api.ts';
import { identityService } from '../identity/api.ts';
import { readConf } from '../../lib/daemon-rpc/conf.ts';
import { peerNetwork, type PeerNetwork } from './api.ts';
import { Announcer } from './announce.ts';
import { peerConfigSchema, protocolConfig, type PeersConfig } from './config.ts';
import { ClockDrift, driftCheck } from './clockdrift.ts';
import { CommandSignatures, type Remembered } from './command-signatures.ts';
import { GlobalCommands } from './global.ts';
import { makeHandlers, shortfalls } from './handlers.ts';
import { addOutgoingPeer, dialBackAsker } from './dial-back.ts';
import { Locations } from './locations.ts';
import { Membership, NOT_LISTED } from './membership.ts';
import { loadOrCreateKeys } from './protocol/keys.ts';
import { PeerNode, type Kept } from './protocol/node.ts';
import { linkOfSocket, wsTransport } from './ws-transport.ts';

/**
 * The kept messages, less those that carry registry credentials (kept by a node from before the refusal):
 * removed from the store and its file rewritten, so the disk keeps no copy either.
 */
async function purgeKept(store: Collection<Kept>, log: { warn(o: object, m: string): void }): Promise<Kept[]> {
  const all = (await store.find({})) as Kept[];
  const bad = new Set<string>();
  for (const k of all) {
    try {
      if (carriesRepoauth(JSON.parse(k.m).payload)) bad.add(k.hash);
    } catch {
      /* a damaged record is skipped where it is read */
    }
  }
  if (!bad.size) return all;
  await store.remove({ hash: { $in: [...bad] } }, { multi: true });
  await store.compact?.();
  log.warn({ messages: bad.size }, 'peers: kept messages carrying registry credentials (repoauth) removed; what the network carries is public');
  return all.filter((k) => !bad.has(k.hash));
}

export default definePlugin({
  id: 'peers',
  version: '1.0.0',
  provides: { peers: peerNetwork },
  deps: {
    apps: optional(appsService),
    daemon: optional(daemonService),
    daemonControl: optional(daemonControlService),
    // Wallet signatures of global commands; without the identity plugin every global command is refused.
    identity: optional(identityService),
    node: coreServices.node,
    store: coreServices.store,
    clock: coreServices.clock,
    events: coreServices.events,
    health: coreServices.health,
    log: coreServices.log,
  },
  configSchema: peerConfigSchema,
  async setup(ctx) {
    const cfg: PeersConfig = ctx.config;
    const keys = loadOrCreateKeys(path.join(ctx.node.dataDir, 'peers', 'node-key.pem'));
    const pc = protocolConfig(cfg, ctx.node);
    const store = ctx.store('messages') as Collection<Kept>;
    await store.ensureIndex({ fieldName: 'hash', unique: true });
    const membership = new Membership({
      mode: cfg.membership,
      daemon: ctx.daemon,
      secret: () => {
        if (cfg.nodePrivateKey) return cfg.nodePrivateKey;
        const file = ctx.daemonControl()?.conf().confFile;
        if (!file) return undefined;
        try {
          const v = readConf(file).values;
          return v.legacynodeprivkey || v.corenodeprivkey || undefined;
        } catch {
          return undefined;
        }
      },
      cacheMs: cfg.nodeListCacheMs,
      missRefreshMs: Math.min(cfg.nodeListCacheMs, 5_000),
      log: ctx.log,
    });
    const bound = ctx.node.apiHost && ctx.node.apiHost !== '0.0.0.0' && ctx.node.apiHost !== '::' ? ctx.node.apiHost : undefined;
    let askDialBack: ((addr: string) => void) | undefined;
    const net = new PeerNode(keys, wsTransport({ localAddress: bound, maxPayload: 64 * 1024, path: '/ws/core', timeoutMs: pc.handshakeMs ?? 10_000 }), pc, {
      now: () => Date.now(),
      setTimer: (fn, ms) => {
        const t = setTimeout(fn, ms);
        t.unref();
        return { clear: () => clearTimeout(t) };
      },
      onKept: (added, dropped) => {
        for (const k of added) void store.insert({ hash: k.hash, m: k.m, s: k.s, sentAt: k.sentAt, type: k.type }).catch(() => undefined);
        if (dropped.length) void store.remove({ hash: { $in: dropped } }, { multi: true }).catch(() => undefined);
      },
      log: ctx.log,
      askDialBack: (addr) => askDialBack?.(addr),
      admission: membership,
      // What the network carries is public: a message with registry credentials in it goes nowhere.
      refuse: (_type, payload) => (carriesRepoauth(payload) ? REPOAUTH_IS_PUBLIC : undefined),
    });

    // Admitted peers that a node list read now no longer shows at their IP are dropped; an unreadable list
    // changes nothing (a node whose daemon is down keeps its peers and admits nobody new).
    const recheck = setInterval(() => {
      if (cfg.membership !== 'nodelist') return;
      for (const c of net.conns) {
        if (c.state !== 'open' || !c.member) continue;
        void membership.stillListed(c.member, c.ip).then((ok) => {
          if (ok === false) net.drop(c, NOT_LISTED, 'no longer a listed node', false);
        });
      }
    }, cfg.nodeListCacheMs);
    recheck.unref();
    askDialBack = dialBackAsker(net, ctx.log);

    // Discovery: the nodes of the node list are the addresses to dial (seeds stay an option), read as often
    // as admissions re-read the list; this node's own entry gives its address.
    // An unreadable list (the daemon still starting, or down) is tried again within 5 s.
    let discovery: NodeJS.Timeout | undefined;
    let disposed = false;
    const discover = async () => {
      const l = await membership.listed().catch(() => null);
      if (disposed) return;
      if (l) {
        const fresh = l.addrs.some((a) => !net.known.get(a)?.listed);
        net.setListed(l.addrs, !!l.own);
        if (l.own && !cfg.ip) net.setOwnAddress(l.own.ip);
        if (fresh) net.maintain();
      }
      discovery = setTimeout(() => void discover(), l ? cfg.nodeListCacheMs : Math.min(cfg.nodeListCacheMs, 5_000));
      discovery.unref();
    };

    const locations = new Locations(() => Date.now(), cfg.locationTtlMs);
    const kept = await purgeKept(store, ctx.log);
    net.restore(kept);
    // Rebuild what the kept notices say (in send order): a restarted node knows where apps run at once.
    for (const k of kept.sort((a, b) => a.sentAt - b.sentAt)) {
      try {
        const b = JSON.parse(k.m);
        locations.apply(b.type, b.payload, b.origin, b.sentAt, b.sentAt);
      } catch {
        /* a damaged record is skipped */
      }
    }
    for (const t of ['apprunning', 'appremoved', 'appinstalling', 'appinstallingerror'])
      net.on(t, (m) => {
        if (locations.apply(m.type, m.payload, m.origin, m.sentAt)) ctx.events.emit(`network:${m.type}`, { origin: m.origin, payload: m.payload });
      });
    // The last messages delivered here (networkhealth shows them; a broadcastmessage with its data).
    const recent: { hash: string; type: string; origin: string; sentAt: number; hops: number; receivedAt: number; data?: unknown }[] = [];
    net.onAny((m) => {
      recent.push({ hash: m.hash, type: m.type, origin: m.origin, sentAt: m.sentAt, hops: m.hops, receivedAt: Date.now(), ...(m.type === 'broadcastmessage' ? { data: m.payload } : {}) });
      if (recent.length > 100) recent.shift();
    });
    net.on('broadcastmessage', (m) => void ctx.events.emit('network:broadcastmessage', { origin: m.origin, data: m.payload }));

    const ownAddr = () => net.self;
    /** Broadcast a notice and apply it here too (a node does not receive its own messages). */
    const notice = (type: string, payload: Record<string, unknown>) => {
      const full = { ...payload, ip: ownAddr() };
      locations.apply(type, full, keys.publicKey, Date.now());
      net.broadcast(type, full);
    };
    const announcer = new Announcer(ctx.apps, ctx.events, notice, cfg.announceMs, ctx.log);
    const signatures = new CommandSignatures(
      () => {
        const id = ctx.identity();
        return id ? (m, who, sig) => id.verifySignature(m, who, sig) : undefined;
      },
      cfg.globalCommandMaxAgeMs,
      ctx.store('commands') as Collection<Remembered>,
      () => Date.now(),
      ctx.log,
    );
    await signatures.init();
    const global = new GlobalCommands(net, ctx.apps, ctx.node, ctx.log, cfg.globalCommandMaxAgeMs, membership, signatures);

    const service: PeerNetwork = {
      get nodeKey() {
        return keys.publicKey;
      },
      broadcast: async (type, payload) => void net.broadcast(type, payload),
      on: (type, handler) =>
        net.on(type, (m) => handler({ type: m.type, payload: m.payload as any, origin: m.origin, sentAt: m.sentAt })),
      locations: async (app) => locations.locations(app),
      nodes: async () => locations.nodes(),
      heard: () => locations.heard(),
      address: () => ownAddr(),
      runGlobal: (cmd, here) => global.send(cmd, here),
      globalOutcomes: (id) => global.outcomes.filter((o) => o.id === id),
      links: () => [...net.outgoing(), ...net.incoming()].map((c) => ({ ip: c.ip, port: c.port, direction: c.direction, nodeKey: c.key })),
      shortfalls: () => shortfalls(net),
    };

    // The clock against the peers': measured at each ping round (offsets change with pings), so a drift
    // over the limit is logged when it happens even if nobody asks; the route and the check measure anew.
    const drift = new ClockDrift(cfg.maxClockDriftMs, () => Date.now(), ctx.log);
    const measureDrift = () =>
      drift.measure(net.outgoing().concat(net.incoming()).map((c) => ({ ip: c.ip, port: c.port, direction: c.direction, nodeKey: c.key, remoteClockOffsetMs: c.remoteClockOffsetMs, latency: c.latency })));
    const driftTimer = setInterval(measureDrift, cfg.pingMs);
    driftTimer.unref();
    // Not required: a drifting clock is the operator's to fix; it does not refuse logins (spec: the
    // phrase gates are the reference's, and the clock is not one of them).
    const dropDriftCheck = ctx.health.register('clockdrift', () => driftCheck(measureDrift()), { required: false });

    net.start();
    if (cfg.membership === 'nodelist') void discover();
    announcer.start();
    const handlers = makeHandlers({ net, locations, recent, ownAddr, clockdrift: measureDrift });
    return {
      handlers: {
        ...handlers,
        peerSocket: websocket((input, socket) => net.accept(linkOfSocket(socket, input.ip, input.secure))),
        addoutgoingpeer: addOutgoingPeer(net, membership),
      },
      services: { peers: service },
      dispose: () => {
        clearInterval(recheck);
        disposed = true;
        clearTimeout(discovery);
        clearInterval(driftTimer);
        dropDriftCheck();
        announcer.stop();
        global.stop();
        net.stop();
      },
    };
  },
});
