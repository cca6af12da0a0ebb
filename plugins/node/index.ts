/**
 * Node information that needs no other service: version, clocks, runtime, configured ports, and the
 * fitness-check framework behind `/core/health` (which gates `GET /id/loginphrase`).
 */
import os from 'node:os';
import { ApiError, VERSION, configSchema, coreServices, definePlugin, sse } from '../../core/plugin-api.ts';

interface NodeConfig {
  routerIp: string;
  hardenedOs: boolean;
  eventStream: boolean;
}

export default definePlugin({
  id: 'node',
  version: VERSION,
  deps: { clock: coreServices.clock, store: coreServices.store, health: coreServices.health, events: coreServices.events, node: coreServices.node },
  configSchema: configSchema<NodeConfig>({
    type: 'object',
    properties: {
      routerIp: { type: 'string', default: '' },
      hardenedOs: { type: 'boolean', default: false },
      eventStream: { type: 'boolean', default: false },
    },
    additionalProperties: false,
  }),
  setup(ctx) {
    const started = ctx.clock.now();
    // The store answering a trivial query is the first fitness check (reference gate 1).
    const probe = ctx.store('probe');
    const dropCheck = ctx.health.register('database', async () => {
      await probe.count({});
      return { ok: true };
    });
    return {
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
          signal.addEventListener('abort', () => stream.close());
          await stream.done();
          off();
        }),
      },
      dispose: () => dropCheck(),
    };
  },
});
