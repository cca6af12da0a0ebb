/**
 * The blockchain daemon relay: provides the `daemon` service (a JSON-RPC client with this node's limits and
 * hot-read cache) to other plugins, and serves the /daemon routes its manifest declares. Most routes use the
 * one generic `relay` handler driven by the route's `x` block; a few differ where the behaviour does.
 */
import path from 'node:path';
import { VERSION, coreServices, definePlugin, type HandlerInput } from '../../core/plugin-api.ts';
import { daemonControlService, daemonService } from './api.ts';
import { toApiError } from '../../lib/daemon-rpc/errors.ts';
import { DAEMON_METHODS, methodTable } from '../../lib/daemon-rpc/methods.ts';
import { createControl } from './control.ts';
import { routeData, rpcName, rpcParams, type RpcRoute } from './rpc-route.ts';
import { createDaemonService } from './service.ts';
import { configSchema, DAEMON_PROFILE } from './settings.ts';
import { localPorts } from '../../lib/daemon-rpc/endpoint.ts';
import { specialHandlers } from './special.ts';

export default definePlugin({
  id: 'daemon',
  version: VERSION,
  configSchema,
  routeData,
  deps: { clock: coreServices.clock, node: coreServices.node, health: coreServices.health, ports: coreServices.ports },
  provides: { daemon: daemonService, daemonControl: daemonControlService },
  setup(ctx) {
    const settings = ctx.config;
    const service = createDaemonService(settings, ctx.clock);
    const method = methodTable(DAEMON_METHODS, settings.methods);
    const control = createControl(settings, service, path.join(ctx.node.dataDir, 'daemon'));
    const dropPorts = ctx.ports.claim('the daemon (RPC and P2P)', localPorts(settings, DAEMON_PROFILE));

    // Not a login gate (facts §2.1): a dead daemon is reported, never blocks the node.
    const dropCheck = ctx.health.register(
      'daemon',
      async () => {
        const info = await service.probe();
        return { ok: true, message: `${info.chain} chain at height ${info.blocks}`, detail: { blocks: info.blocks, headers: info.headers, chain: info.chain } };
      },
      { required: false, timeoutMs: settings.health.timeoutMs + 500 },
    );

    /**
     * Call the daemon for a route; only public routes may be answered from the shared cache. Callers who
     * are not the operator or the core team wait in the public lane, so they cannot crowd out the
     * operator's routes or the node's own callers (the explorer), which use the priority lane.
     */
    async function call<T = unknown>(input: HandlerInput, name: string, params: unknown[], opts: { cache?: boolean } = {}): Promise<T> {
      try {
        const cache = input.route.level === 'public' && opts.cache !== false;
        const lane = input.caller.isAdmin || input.caller.isCoreTeam ? 'priority' : 'public';
        return await service.call<T>(method(name), params, { cache, signal: input.signal, lane });
      } catch (e) {
        throw toApiError(e);
      }
    }

    async function relay(input: HandlerInput) {
      const meta = input.route.meta as RpcRoute;
      return call(input, rpcName(meta, input.route.id), rpcParams(meta, input.values));
    }

    const controlled = (fn: () => Promise<unknown>) => async () => {
      try {
        return await fn();
      } catch (e) {
        throw toApiError(e);
      }
    };

    return {
      handlers: {
        relay,
        ...specialHandlers(call),
        start: controlled(control.start),
        restart: controlled(control.restart),
        reindex: controlled(control.reindex),
      },
      services: { daemon: service, daemonControl: { ...control, conf: () => ({ confFile: settings.confFile, network: settings.network }) } },
      dispose: () => {
        dropPorts();
        dropCheck();
        service.close();
      },
    };
  },
});
