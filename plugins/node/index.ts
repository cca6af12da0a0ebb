/**
 * The node's own routes under /core (spec: Node operations): information, fitness checks behind
 * `/core/health` (which gate `GET /id/loginphrase`), the event stream, the logs, the node's state, and the
 * control of the daemons and of the node software. Split by topic: logs.ts, state.ts, control.ts,
 * software.ts, overlay.ts; settings.ts is the `node:` config section.
 */
import os from 'node:os';
import path from 'node:path';
import { ApiError, VERSION, coreServices, definePlugin, optional, sse, type Collection } from '../../core/plugin-api.ts';
import { daemonControlService, daemonService } from '../daemon/api.ts';
import { peerNetwork } from '../peers/api.ts';
import { nodePorts } from './api.ts';
import { createAppPorts, type HeldPort } from './app-ports.ts';
import { createBenchmark } from './benchmark.ts';
import { controlHandlers } from './control.ts';
import { DOS_BAN, createDos } from './dos.ts';
import { createDosRounds } from './dossources.ts';
import { createGeolocator } from './geolocation.ts';
import { logHandlers } from './logs.ts';
import { createFirewall, firewallHandlers } from './firewall.ts';
import { hardenedHandlers } from './hardened.ts';
import { overlayHandlers } from './overlay.ts';
import { paymentHandlers } from './payment.ts';
import { portHandlers } from './ports.ts';
import { ensurePgpKey } from './pgp.ts';
import { schema, softwareRoot } from './settings.ts';
import { stateHandlers } from './state.ts';
import { streamHandlers } from './streamchain.ts';
import { createUpnp, keepOwnPorts } from './upnp.ts';

export default definePlugin({
  id: 'node',
  version: VERSION,
  // Ports other plugins hold open on the firewall and the router (the apps plugin: its apps' host ports).
  provides: { nodePorts },
  deps: {
    clock: coreServices.clock,
    store: coreServices.store,
    health: coreServices.health,
    events: coreServices.events,
    node: coreServices.node,
    log: coreServices.log,
    daemon: optional(daemonService),
    daemonControl: optional(daemonControlService),
    // The DOS rounds' peer checks (dossources.ts); without the peers plugin they are not made.
    peers: optional(peerNetwork),
  },
  configSchema: schema,
  async setup(ctx) {
    const started = ctx.clock.now();
    const config = { ...ctx.config, softwareDir: ctx.config.softwareDir || softwareRoot() };
    const own = path.join(ctx.node.dataDir, 'node');
    // The store answering a trivial query is the first fitness check (reference gate 1).
    const probe = ctx.store('probe');
    const dropCheck = ctx.health.register('database', async () => {
      await probe.count({});
      return { ok: true };
    });
    const dos = createDos(ctx.store('state'), ctx.events);
    // A banned node refuses login phrases like any failed fitness check (spec: DOS state, Authentication 4).
    const dropDos = ctx.health.register('dos', async () => {
      const s = await dos.get();
      return s.dosState >= DOS_BAN ? { ok: false, message: s.dosMessage ?? `DOS counter ${s.dosState}` } : { ok: true, message: `DOS counter ${s.dosState}` };
    });
    const pgpKey = await ensurePgpKey(own, ctx.node.operatorId);
    const benchmark = createBenchmark(ctx.config.benchmark, path.join(own, 'control.log'));
    const geo = createGeolocator(ctx.config, ctx.clock);
    const overlay = overlayHandlers(ctx.node.dataDir);
    const payment = paymentHandlers(ctx.clock, ctx.store('paymentrequests'), ctx.store('payments'));
    const dosRounds = createDosRounds({
      config: ctx.config.dos,
      apiPort: ctx.node.apiPort,
      availabilityTimeoutMs: ctx.config.availability.timeoutMs,
      dos,
      benchmark,
      daemon: ctx.daemon,
      peers: ctx.peers,
      store: ctx.store('state'),
      clock: ctx.clock,
      events: ctx.events,
      log: ctx.log,
    });
    const upnp = createUpnp(ctx.config.upnp);
    const appPorts = createAppPorts({
      store: ctx.store('appports') as Collection<HeldPort>,
      firewall: createFirewall(ctx.config.firewall, path.join(own, 'control.log')),
      upnp: ctx.config.upnp.enabled ? upnp : null,
      clock: ctx.clock,
      log: ctx.log,
    });
    // The held ports are done again in the round of the node's own mappings, or without UPnP on a timer of
    // the same period (a firewall change that failed is tried again); both run a first round now.
    const ownPorts = ctx.config.upnp.enabled ? keepOwnPorts(upnp, ctx.node.apiPort, ctx.config.upnp, ctx.log, ctx.node.httpsPort, appPorts.refresh) : undefined;
    const stopAppRounds = ownPorts ? undefined : appPorts.every(ctx.config.upnp.refreshMinutes * 60_000);
    return {
      services: { nodePorts: appPorts.service },
      handlers: {
        version: () => VERSION,
        timezone: () => Intl.DateTimeFormat().resolvedOptions().timeZone,
        uptime: () => Math.floor((ctx.clock.now() - started) / 1000),
        systemuptime: () => Math.round(os.uptime() * 1000),
        nodejsversions: () => process.versions,
        apiport: () => String(ctx.node.apiPort),
        routerip: () => ctx.config.routerIp,
        ishardenedos: () => ctx.config.hardenedOs,
        id: () => ctx.node.operatorId,
        coreids: () => ({ coreTeamCoreID: ctx.node.coreTeam[0] ?? '', coreSupportTeamCoreID: ctx.node.coreTeam[1] ?? '' }),
        // Messages and details name internal endpoints (`http://127.0.0.1:16224/`) and daemon state: only
        // the operator reads them; everyone else gets the verdicts.
        health: async ({ caller }) => {
          const report = await ctx.health.run();
          if (caller.isAdmin) return report;
          return { healthy: report.healthy, checks: report.checks.map(({ name, ok, required }) => ({ name, ok, required })) };
        },
        eventstream: sse(async ({ headers, signal }, stream) => {
          if (!ctx.config.eventStream) throw new ApiError(404, 'NotFound', 'Event stream not enabled', 404);
          const last = Number(headers['last-event-id']);
          if (Number.isInteger(last) && last >= 0) for (const ev of ctx.events.since(last)) stream.send(ev.name, ev.data, ev.id);
          const off = ctx.events.on('*', (ev) => stream.send(ev.name, ev.data, ev.id));
          // A comment now and then keeps proxies from closing a quiet stream (facts §4.7: every 15 s).
          const keepalive = setInterval(() => stream.comment('keepalive'), ctx.config.eventStreamKeepaliveMs);
          signal.addEventListener('abort', () => stream.close());
          await stream.done();
          clearInterval(keepalive);
          off();
        }),
        ...logHandlers(ctx.config, ctx.node.dataDir, ctx.daemonControl),
        ...stateHandlers({ config, node: ctx.node, daemon: ctx.daemon, benchmark, dos, geo, pgp: async () => pgpKey }),
        ...controlHandlers(config, {
          daemon: ctx.daemonControl,
          rpc: ctx.daemon,
          warmMs: ctx.config.daemon.warmWaitMs,
          benchmark,
          logDir: own,
          log: ctx.log,
          exit: () => process.kill(process.pid, 'SIGTERM'),
        }),
        adjustrouterip: overlay.adjustrouterip,
        adjustapiport: overlay.adjustapiport,
        adjustchainaccount: overlay.adjustchainaccount,
        paymentrequest: payment.paymentrequest,
        verifypayment: payment.verifypayment,
        wspayment: payment.wspayment,
        ...hardenedHandlers(ctx.config),
        ...firewallHandlers(ctx.config, path.join(own, 'control.log')),
        ...portHandlers({ config: ctx.config, upnp, daemon: ctx.daemon, log: ctx.log }),
        ...streamHandlers({ control: ctx.daemonControl, rpc: ctx.daemon, log: ctx.log, stopWaitMs: ctx.config.daemon.stopWaitMs }),
      },
      dispose: async () => {
        dropCheck();
        dropDos();
        payment.dispose();
        await ownPorts?.stop();
        stopAppRounds?.();
        await appPorts.settle();
        await dosRounds.stop();
      },
    };
  },
});
