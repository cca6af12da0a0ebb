/**
 * Applications: signed app specifications registered and paid on chain, the signed network policy, and
 * the apps installed and run on this node's Docker (dockerode). The host is used here only: config,
 * stores, services (identity signatures, explorer payments, daemon), the app-owner lookup, the policy gate.
 */
import path from 'node:path';
import { configSchema, coreServices, definePlugin, optional, Reply, type Collection, type HandlerInput, type PlainHandler } from '../../core/plugin-api.ts';
import { daemonService } from '../daemon/api.ts';
import { explorerPayments } from '../explorer/api.ts';
import { identityService } from '../identity/api.ts';
import { Engine } from './engine.ts';
import { mountRoots } from './bind-check.ts';
import { Guard, type AbuseRules } from './guard.ts';
import { Monitor } from './monitor.ts';
import { locations, type NodePlace } from './placement.ts';
import { TamperingLog, type TamperingEvent } from './tampering.ts';
import { makeHandlers } from './handlers.ts';
import { Installer, type InstalledApp } from './installer.ts';
import { TestInstalls, type TestInstallLimits } from './test-installs.ts';
import { PaymentWatcher, type Payment } from './payments.ts';
import { POLICY_GATE, PolicyHolder } from './policy.ts';
import { priceOf, type PriceConfig } from './pricing.ts';
import { Reconciler } from './reconciler.ts';
import { Registry } from './registry.ts';
import { checkSpecification, type RuleContext } from './spec-rules.ts';
import { checkVolumeFolders, Volumes } from './volumes.ts';
import { Updater } from './updates.ts';
import { redactSpec, Secrets } from './secrets.ts';
import { purgeRepoauth } from './repoauth.ts';
import { appsService, type AppsService, type InstalledAppView } from './api.ts';
import { peerNetwork } from '../peers/api.ts';
import { nodePorts } from '../node/api.ts';
import { openAppPorts } from './open-ports.ts';
import { announceInstalls, lastLine, relayPolicy, relayRegistry, verbRunner, withGlobal, withPeerPlaces } from './network.ts';
import { PlacementLoop, type PlacementConfig } from './placement-loop.ts';
import { placementChecks, portsOfSpec } from './placement-fit.ts';
import { LimitsHolder, placementRoutes } from './placement-routes.ts';
import type { Readable } from 'node:stream';
import { ignoreNotRunning } from './installer.ts';
import { normalise } from './spec.ts';
import { StreamLimits, type StreamBounds } from './streams.ts';

export interface AppsConfig {
  docker: { socketPath: string; subnetBase: string; nofile: number };
  publishHost: string;
  nodeHostIp: string;
  volumesDir: string;
  diskReserveGB: number;
  appsDir: string;
  registryAddress: string;
  privateRegistries: string[];
  minConfirmations: number;
  paymentPollMs: number;
  temporaryMessageMinutes: number;
  reconcileIntervalMs: number;
  pullStallSeconds: number;
  testInstall: TestInstallLimits;
  policy: { sources: string[]; refreshSeconds: number };
  price: PriceConfig;
  monitor: { intervalMs: number };
  streams: StreamBounds;
  guard: { intervalMs: number } & AbuseRules;
  node: NodePlace;
  placement: PlacementConfig;
}

const ms = (d: number, minimum = 50) => ({ type: 'integer', minimum, default: d });

export default definePlugin({
  id: 'apps',
  version: '1.0.0',
  provides: { apps: appsService },
  deps: {
    identity: identityService,
    // Payments wait while the explorer or the daemon is disabled; installed apps are managed all the same.
    payments: optional(explorerPayments),
    daemon: optional(daemonService),
    // The peer network (issue 17): registrations, the policy and global commands travel on it when enabled.
    peers: optional(peerNetwork),
    // The installed apps' host ports on the firewall and the router (open-ports.ts), when the node plugin runs.
    nodePorts: optional(nodePorts),
    node: coreServices.node,
    store: coreServices.store,
    clock: coreServices.clock,
    auth: coreServices.auth,
    events: coreServices.events,
    gates: coreServices.gates,
    log: coreServices.log,
    ports: coreServices.ports,
  },
  configSchema: configSchema<AppsConfig>({
    type: 'object',
    additionalProperties: false,
    properties: {
      docker: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          socketPath: { type: 'string', minLength: 1, default: '/var/run/docker.sock' },
          subnetBase: { type: 'string', pattern: '^\\d{1,3}\\.\\d{1,3}$', default: '172.23' },
          nofile: { type: 'integer', minimum: 1024, default: 100000 },
        },
      },
      publishHost: { type: 'string', default: '0.0.0.0' },
      nodeHostIp: { type: 'string', default: '' },
      volumesDir: { type: 'string', default: '' },
      // Space of the volumes' filesystem no app volume may take (Volumes.assertRoom).
      diskReserveGB: { type: 'number', minimum: 0, default: 2 },
      appsDir: { type: 'string', default: '' },
      registryAddress: { type: 'string', default: '' },
      // Image registries on loopback, link-local, private-range or this node's addresses that apps may
      // pull from all the same (image-host.ts): `host:port`, or `host` for any of its ports. None by default.
      privateRegistries: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9.-]+(:\\d{1,5})?$' }, default: [] },
      minConfirmations: { type: 'integer', minimum: 1, default: 1 },
      paymentPollMs: { type: 'integer', minimum: 50, default: 5000 },
      temporaryMessageMinutes: { type: 'integer', minimum: 1, default: 120 },
      reconcileIntervalMs: { type: 'integer', minimum: 50, default: 5000 },
      // A pull that reports no progress for this long is aborted (Engine.pull).
      pullStallSeconds: { type: 'number', exclusiveMinimum: 0, default: 120 },
      // Unpaid test installs (test-installs.ts): how long one may take, how many run at once.
      testInstall: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          timeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 600 },
          maxConcurrent: { type: 'integer', minimum: 1, default: 2 },
        },
      },
      policy: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          sources: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
          refreshSeconds: { type: 'number', minimum: 0.05, default: 3600 },
        },
      },
      // Log and stats reads at once (streams.ts): per caller, and on the node.
      streams: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          perCaller: { type: 'integer', minimum: 1, maximum: 1000, default: 4 },
          total: { type: 'integer', minimum: 1, maximum: 10000, default: 16 },
        },
      },
      monitor: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: { intervalMs: { type: 'integer', minimum: 50, default: 60_000 } },
      },
      guard: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          intervalMs: { type: 'integer', minimum: 50, default: 60_000 },
          oomKillsPerHour: { type: 'integer', minimum: 1, default: 3 },
          cpuOfLimit: { type: 'number', exclusiveMinimum: 0, default: 0.95 },
          cpuSamples: { type: 'integer', minimum: 1, default: 55 },
        },
      },
      node: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          tier: { enum: ['', 'cumulus', 'nimbus', 'stratus'], default: '' },
          continent: { type: 'string', pattern: '^[A-Z]{0,2}$', default: '' },
          country: { type: 'string', pattern: '^[A-Z]{0,2}$', default: '' },
          region: { type: 'string', maxLength: 32, default: '' },
          faultDomain: { type: 'string', maxLength: 128, default: '' },
          staticIp: { type: 'boolean', default: false },
          pubkey: { type: 'string', maxLength: 200, default: '' },
          reserve: {
            type: 'object',
            additionalProperties: false,
            default: {},
            properties: {
              cpu: { type: 'number', minimum: 0, default: 0.5 },
              ram: { type: 'integer', minimum: 0, default: 1000 },
              hdd: { type: 'integer', minimum: 0, default: 40 },
            },
          },
        },
      },
      // The placement loop (placement-loop.ts, rules in placement-plan.ts): on by default.
      placement: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          enabled: { type: 'boolean', default: true },
          // Apps installed here (placed or by hand) beyond which the loop takes no more.
          maxApps: { type: 'integer', minimum: 0, default: 100 },
          // What all apps here may lock, beyond the tier's totals less the reserve: 0 = no limit of its own.
          maxResources: {
            type: 'object',
            additionalProperties: false,
            default: {},
            properties: { cpu: { type: 'number', minimum: 0, default: 0 }, ram: { type: 'integer', minimum: 0, default: 0 }, hdd: { type: 'integer', minimum: 0, default: 0 } },
          },
          tickMs: ms(2000),
          reannounceMs: ms(15_000),
          fitCacheMs: ms(60_000),
          warmupMs: ms(20_000, 0),
          goneAfterMs: ms(45_000),
          delayWindowMs: ms(10_000, 0),
          settleMs: ms(3000, 0),
          backoffBaseMs: ms(60_000),
          backoffMaxMs: ms(3_600_000),
        },
      },
      price: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          cpuUsd: { type: 'number', minimum: 0, default: 3 },
          ramUsd: { type: 'number', minimum: 0, default: 1 },
          hddUsd: { type: 'number', minimum: 0, default: 0.05 },
          minimumUsd: { type: 'number', minimum: 0, default: 0.99 },
          coinUsd: { type: 'number', exclusiveMinimum: 0, default: 0.5 },
        },
      },
    },
  }),
  async setup(ctx) {
    const cfg = ctx.config;
    const verify = (m: string, id: string, s: string) => ctx.identity.verifySignature(m, id, s);
    const base = path.resolve(ctx.node.dataDir, 'apps');

    const secrets = Secrets.load(path.join(base, 'secret.key'));
    const registry = new Registry(
      { temporary: ctx.store('temporary'), permanent: ctx.store('permanent'), specs: ctx.store('specs') },
      ctx.clock,
      verify,
      cfg.temporaryMessageMinutes * 60_000,
      () => ctx.payments()?.tip()?.height ?? null,
    );
    await registry.init();

    let policyRelay: ReturnType<typeof relayPolicy> | undefined;
    const policy = new PolicyHolder({
      sources: cfg.policy.sources,
      file: path.join(base, 'network-policy.json'),
      isCoreTeam: (id) => ctx.node.coreTeam.includes(id),
      verify,
      onChange: (held) => {
        ctx.gates.set(POLICY_GATE, !!held);
        policyRelay?.changed();
      },
      now: () => ctx.clock.now(),
      log: ctx.log,
    });
    policy.loadKept();
    await policy.refresh();
    policy.start(cfg.policy.refreshSeconds * 1000);

    const registries = { allowed: cfg.privateRegistries, ownAddresses: [cfg.nodeHostIp] };
    const rules = (): RuleContext => ({
      isEnterprise: (o: string) => policy.isEnterprise(o),
      blockedPorts: policy.held?.policy.blockedPorts ?? [],
      ownPort: (p) => ctx.ports.whose(p),
      registries,
    });
    const price = (raw: Record<string, any>) => priceOf(checkSpecification(raw, rules()), cfg.price).satoshis;

    const volumes = new Volumes(cfg.volumesDir || path.join(base, 'volumes'), cfg.appsDir || path.join(base, 'mounts'), cfg.diskReserveGB * 1024 ** 3);
    checkVolumeFolders(ctx.node.dataDir, { volumesDir: volumes.volumesDir, appsDir: volumes.appsDir });
    const engine = new Engine({ socketPath: cfg.docker.socketPath, subnetBase: cfg.docker.subnetBase, publishHost: cfg.publishHost, nodeHostIp: cfg.nodeHostIp, nofile: cfg.docker.nofile, registries, pullStallMs: cfg.pullStallSeconds * 1000 }, volumes, secrets);
    const installed = ctx.store('installed') as Collection<InstalledApp>;
    await installed.ensureIndex({ fieldName: 'name', unique: true });
    // Specifications stored by an older node may hold registry credentials: removed before anything reads them.
    await purgeRepoauth({ temporary: ctx.store('temporary'), permanent: ctx.store('permanent'), specs: ctx.store('specs'), installed: installed as Collection }, ctx.log);
    const installer = new Installer(engine, installed, policy, () => ctx.clock.now());
    const testInstalls = new TestInstalls(installer, cfg.testInstall);

    // The owner of an app for the appowner levels: the registry's, else the owner of what is installed here,
    // else the owner the identity plugin records (it serves the lookup on nodes without this plugin).
    const dropOwners = ctx.auth.useAppOwnerLookup(
      async (app) => (await registry.owner(app)) ?? (await installer.installed(app))?.owner ?? (await ctx.identity.appOwners.get(app)),
    );

    const payments = new PaymentWatcher({
      store: ctx.store('payments') as Collection<Payment>,
      registry,
      address: cfg.registryAddress,
      minConfirmations: cfg.minConfirmations,
      // Looked up when used: the explorer and the daemon may be disabled (payments then wait for them).
      explorer: () => ctx.payments() ?? null,
      daemon: () => ctx.daemon() ?? null,
      price,
      log: ctx.log,
    });
    payments.start(cfg.paymentPollMs);

    const emit = (name: string, data: Record<string, unknown>) => void ctx.events.emit(name, data);
    const monitor = new Monitor(path.join(base, 'monitor.sqlite'), engine, installer, () => ctx.clock.now(), ctx.log);
    const tampering = new TamperingLog(ctx.store('tampering') as Collection<TamperingEvent>, () => ctx.clock.now());
    await tampering.init();
    const guard = new Guard(engine, installer, tampering, monitor, cfg.guard, emit, () => ctx.clock.now(), ctx.log);
    // A start the bind check refused is tampering: the owner put a link (or worse) where a mount source is.
    engine.onMountRefused = (e) =>
      void (async () => {
        for (const rec of await installed.find({})) {
          const comp = rec.components.find((c) => c.container === e.container);
          if (comp) await guard.report(rec, comp, 'mount_refused', e.message);
        }
      })().catch((err) => ctx.log.warn({ err: (err as Error).message }, 'apps: recording a refused mount failed'));
    const reconciler = new Reconciler(engine, installer, () => ctx.clock.now(), ctx.log, guard);
    try {
      const n = await reconciler.adopt();
      if (n) ctx.log.info({ containers: n }, 'apps: adopted the running containers of installed apps');
    } catch (e) {
      ctx.log.warn({ err: (e as Error).message }, 'apps: Docker not reachable at start; the reconciler keeps trying');
    }
    reconciler.start(cfg.reconcileIntervalMs);
    monitor.start(cfg.monitor.intervalMs);
    guard.start(cfg.guard.intervalMs);
    // Updates and expiry look at the registry as often as payments are (they change with payments and blocks).
    const updater = new Updater({ registry, installer, policy, rules, now: () => ctx.clock.now(), emit, forget: (c) => monitor.forget(c), log: ctx.log });
    updater.start(cfg.paymentPollMs);
    const purge = setInterval(() => void registry.purgeTemporary().catch(() => {}), 60_000);
    purge.unref();

    announceInstalls(installer, emit);
    const openPorts = openAppPorts({ nodePorts: ctx.nodePorts, installed: async () => installer.store.find({}), events: ctx.events, log: ctx.log });
    const stopRegistryRelay = relayRegistry(registry, ctx.peers, (s) => void checkSpecification(s, rules()), ctx.log);
    policyRelay = relayPolicy(policy, ctx.peers, ctx.log);
    const local = makeHandlers({ registry, installer, engine, policy, price: cfg.price, registryAddress: cfg.registryAddress, minConfirmations: cfg.minConfirmations, rules, monitor, tampering, emit, place: cfg.node, publishHost: cfg.publishHost, nodeIp: cfg.nodeHostIp, secrets, streams: new StreamLimits(cfg.streams), testInstalls });
    // Placement: the loop, the operator's limits, the apps withdrawn by a global remove (until updated).
    const withdrawnStore = ctx.store('withdrawn') as Collection<{ name: string; hash: string }>;
    const withdraw = async (app: string) => {
      const g = await registry.spec(app);
      if (!g) return;
      await withdrawnStore.update({ name: g.name }, { name: g.name, hash: g.hash }, { upsert: true });
      ctx.log.info({ app: g.name }, 'apps: withdrawn from placement by a global remove (placed again once updated)');
    };
    const isWithdrawn = async (g: { name: string; hash: string }) => (await withdrawnStore.findOne({ name: g.name }))?.hash === g.hash;
    const limits = new LimitsHolder({ enabled: cfg.placement.enabled, maxApps: cfg.placement.maxApps, maxResources: cfg.placement.maxResources }, ctx.store('placement'));
    await limits.load();
    const streamed = async (handler: PlainHandler, appname: string) => {
      const values = { appname, force: false };
      const r = await handler({ params: values, query: {}, values, headers: {} } as unknown as HandlerInput);
      const end = r instanceof Reply ? await lastLine(r.body as Readable) : { status: 'success' };
      if (end.status !== 'success') throw new Error(end.message ?? `${appname}: no final status`);
    };
    // The host ports of every global app, for the shared-address check: read once for a round of fit
    // checks (each reading all specifications cost the loop most of its CPU with 200 apps known, measured).
    let portsMemo: { at: number; map: Promise<Map<string, number[]>> } | undefined;
    const portsOf = () => {
      const now = ctx.clock.now();
      if (!portsMemo || now - portsMemo.at > 5000)
        portsMemo = {
          at: now,
          map: registry.globals().then((gs) => new Map(gs.map((g) => [g.name, portsOfSpec(g.appSpecification)]))),
        };
      return portsMemo.map;
    };
    const fitContext = async (g: { name: string; hash: string }) => {
      const net = ctx.peers();
      const ports = await portsOf();
      return {
        place: cfg.node,
        policy,
        installed: await installer.store.find({}),
        publishHost: cfg.publishHost,
        nodeIp: cfg.nodeHostIp,
        policyHeld: !!policy.held,
        maxResources: limits.get().maxResources,
        address: net?.address() ?? '',
        self: net?.nodeKey ?? '',
        heard: net?.heard() ?? new Map(),
        portsOf: (app: string) => ports.get(app) ?? [],
        withdrawn: await isWithdrawn(g),
      };
    };
    // A specification checked once per message hash (it never changes under one) and per policy: the
    // schema and rule checks were most of a fit check's cost.
    const checkedSpecs = new Map<string, { policy: unknown; spec: ReturnType<typeof checkSpecification> | Error }>();
    const checkedSpec = (g: { hash: string; appSpecification: Record<string, any> }) => {
      const held = policy.held;
      let c = checkedSpecs.get(g.hash);
      if (!c || c.policy !== held) {
        let spec: ReturnType<typeof checkSpecification> | Error;
        try {
          spec = checkSpecification(g.appSpecification, rules());
        } catch (e) {
          spec = e as Error;
        }
        if (checkedSpecs.size > 5000) checkedSpecs.clear();
        checkedSpecs.set(g.hash, (c = { policy: held, spec }));
      }
      return c.spec;
    };
    const checksOf = async (name: string) => {
      const g = await registry.spec(name);
      if (!g) return null;
      const spec = checkedSpec(g);
      if (spec instanceof Error) return { feasible: false, tier: '', checks: [{ check: 'specification', ok: false, message: spec.message }], instances: g.appSpecification.instances ?? 3 };
      return { ...(await placementChecks(spec, await fitContext(g))), instances: spec.instances };
    };
    const placement = new PlacementLoop({
      config: cfg.placement,
      limits: () => limits.get(),
      peers: ctx.peers,
      globals: () => registry.globals(),
      installed: async () => await installer.store.find({}),
      height: () => ctx.payments()?.tip()?.height ?? null,
      fit: async (g) => {
        const c = await checksOf(g.name);
        const failed = (c?.checks ?? []).filter((x: any) => !x.ok).map((x: any) => x.message as string);
        return { ok: !!c?.feasible, reasons: c ? failed : ['not a global app'] };
      },
      install: (app) => streamed(local.installapplocally as PlainHandler, app),
      remove: (app) => streamed(local.appremove as PlainHandler, app),
      emit,
      now: () => ctx.clock.now(),
      log: ctx.log,
    });
    placement.start();
    const handlers = {
      ...local,
      ...withGlobal(local as Record<string, PlainHandler>, ctx.peers, withdraw),
      ...withPeerPlaces(local as Record<string, PlainHandler>, ctx.peers),
      ...placementRoutes({ limits, loop: placement, peers: ctx.peers, emit, checksOf }, local.placementfeasibility as PlainHandler),
    };
    const view = (r: InstalledApp): InstalledAppView => ({
      name: r.name,
      owner: r.owner,
      hash: r.hash,
      version: r.version,
      installedAt: r.installedAt,
      specification: redactSpec(r.appSpecification),
      components: r.components.map((c) => {
        const spec = normalise(r.appSpecification);
        const i = spec.components.findIndex((x) => x.name === c.name);
        return {
          name: c.name,
          container: c.container,
          desired: c.desired,
          containerData: spec.components[i]?.containerData ?? '',
          mountpoint: volumes.mountpoint(c.container),
          mounted: volumes.isMounted(c.container),
          mountRoots: i < 0 ? ['appdata'] : mountRoots(spec, i),
        };
      }),
    });
    const component = async (app: string, name: string) => {
      const rec = await installer.installed(app);
      const c = rec?.components.find((x) => x.name === name);
      if (!rec || !c) throw new Error(`${app}/${name} is not installed on this node`);
      return c;
    };
    const apps: AppsService = {
      installed: async (name) => {
        const r = await installer.installed(name);
        return r ? view(r) : null;
      },
      list: async () => (await installer.store.find({})).map(view),
      registered: async (name) => {
        const g = await registry.spec(name);
        return g ? { hash: g.hash, specification: redactSpec(g.appSpecification) } : null;
      },
      stopComponent: async (app, name) => {
        const c = await component(app, name);
        await installer.setDesired(app, [name], 'stopped');
        await engine.container(c.container).stop({ t: 10 }).catch(ignoreNotRunning);
      },
      startComponent: async (app, name) => {
        const c = await component(app, name);
        await installer.setDesired(app, [name], 'running');
        await engine.start(c.container).catch(ignoreNotRunning);
      },
      runVerb: verbRunner(local as Record<string, PlainHandler>),
      withdraw,
      place: async () => ({ ...locations(cfg.node, cfg.nodeHostIp, await installer.store.find({})).node, placement: limits.get().enabled }),
    };
    return {
      handlers,
      services: { apps },
      dispose: async () => {
        await placement.stop();
        openPorts.stop();
        clearInterval(purge);
        stopRegistryRelay();
        policyRelay?.off();
        policy.stop();
        dropOwners();
        ctx.gates.set(POLICY_GATE, false);
        await payments.stop();
        await updater.stop();
        await reconciler.stop();
        await guard.stop();
        await monitor.stop();
      },
    };
  },
});
