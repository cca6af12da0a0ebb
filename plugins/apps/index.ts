/**
 * Applications: signed app specifications registered and paid on chain, the signed network policy, and
 * the apps installed and run on this node's Docker (dockerode). The host is used here only: config,
 * stores, services (identity signatures, explorer payments, daemon), the app-owner lookup, the policy gate.
 */
import path from 'node:path';
import { configSchema, coreServices, definePlugin, optional, type Collection } from '../../core/plugin-api.ts';
import { daemonService } from '../daemon/api.ts';
import { explorerPayments } from '../explorer/api.ts';
import { identityService } from '../identity/api.ts';
import { Engine } from './engine.ts';
import { makeHandlers } from './handlers.ts';
import { Installer, type InstalledApp } from './installer.ts';
import { PaymentWatcher, type Payment } from './payments.ts';
import { POLICY_GATE, PolicyHolder } from './policy.ts';
import { priceOf, type PriceConfig } from './pricing.ts';
import { Reconciler } from './reconciler.ts';
import { Registry } from './registry.ts';
import { checkSpecification } from './spec-rules.ts';
import { Volumes } from './volumes.ts';

export interface AppsConfig {
  docker: { socketPath: string; subnetBase: string; nofile: number };
  publishHost: string;
  nodeHostIp: string;
  volumesDir: string;
  appsDir: string;
  registryAddress: string;
  minConfirmations: number;
  paymentPollMs: number;
  temporaryMessageMinutes: number;
  reconcileIntervalMs: number;
  policy: { sources: string[]; refreshSeconds: number };
  price: PriceConfig;
}

export default definePlugin({
  id: 'apps',
  version: '1.0.0',
  deps: {
    identity: identityService,
    // Payments wait while the explorer or the daemon is disabled; installed apps are managed all the same.
    payments: optional(explorerPayments),
    daemon: optional(daemonService),
    node: coreServices.node,
    store: coreServices.store,
    clock: coreServices.clock,
    auth: coreServices.auth,
    gates: coreServices.gates,
    log: coreServices.log,
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
      appsDir: { type: 'string', default: '' },
      registryAddress: { type: 'string', default: '' },
      minConfirmations: { type: 'integer', minimum: 1, default: 1 },
      paymentPollMs: { type: 'integer', minimum: 50, default: 5000 },
      temporaryMessageMinutes: { type: 'integer', minimum: 1, default: 120 },
      reconcileIntervalMs: { type: 'integer', minimum: 50, default: 5000 },
      policy: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          sources: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
          refreshSeconds: { type: 'number', minimum: 0.05, default: 3600 },
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

    const registry = new Registry(
      { temporary: ctx.store('temporary'), permanent: ctx.store('permanent'), specs: ctx.store('specs') },
      ctx.clock,
      verify,
      cfg.temporaryMessageMinutes * 60_000,
    );
    await registry.init();

    const policy = new PolicyHolder({
      sources: cfg.policy.sources,
      file: path.join(base, 'network-policy.json'),
      isCoreTeam: (id) => ctx.node.coreTeam.includes(id),
      verify,
      onChange: (held) => ctx.gates.set(POLICY_GATE, !!held),
      now: () => ctx.clock.now(),
      log: ctx.log,
    });
    policy.loadKept();
    await policy.refresh();
    policy.start(cfg.policy.refreshSeconds * 1000);

    const rules = () => ({ isEnterprise: (o: string) => policy.isEnterprise(o), blockedPorts: policy.held?.policy.blockedPorts ?? [] });
    const price = (raw: Record<string, any>) => priceOf(checkSpecification(raw, rules()), cfg.price).satoshis;

    const volumes = new Volumes(cfg.volumesDir || path.join(base, 'volumes'), cfg.appsDir || path.join(base, 'mounts'));
    const engine = new Engine({ socketPath: cfg.docker.socketPath, subnetBase: cfg.docker.subnetBase, publishHost: cfg.publishHost, nodeHostIp: cfg.nodeHostIp, nofile: cfg.docker.nofile }, volumes);
    const installed = ctx.store('installed') as Collection<InstalledApp>;
    await installed.ensureIndex({ fieldName: 'name', unique: true });
    const installer = new Installer(engine, installed, policy, () => ctx.clock.now());

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

    const reconciler = new Reconciler(engine, installer, () => ctx.clock.now(), ctx.log);
    try {
      const n = await reconciler.adopt();
      if (n) ctx.log.info({ containers: n }, 'apps: adopted the running containers of installed apps');
    } catch (e) {
      ctx.log.warn({ err: (e as Error).message }, 'apps: Docker not reachable at start; the reconciler keeps trying');
    }
    reconciler.start(cfg.reconcileIntervalMs);
    const purge = setInterval(() => void registry.purgeTemporary().catch(() => {}), 60_000);
    purge.unref();

    const handlers = makeHandlers({ registry, installer, engine, policy, price: cfg.price, registryAddress: cfg.registryAddress, minConfirmations: cfg.minConfirmations, rules });
    return {
      handlers,
      dispose: async () => {
        clearInterval(purge);
        policy.stop();
        dropOwners();
        ctx.gates.set(POLICY_GATE, false);
        await payments.stop();
        await reconciler.stop();
      },
    };
  },
});
