/**
 * The blockchain daemon relay: provides the `daemon` service (a JSON-RPC client with this node's limits and
 * hot-read cache) to other plugins, and serves the /daemon routes its manifest declares. Most routes use the
 * one generic `relay` handler driven by the route's `x` block; a few differ where the behaviour does.
 */
import { VERSION, definePlugin, type HandlerInput } from '../../core/plugin-api.ts';
import { toApiError } from './errors.ts';
import { methodTable } from './methods.ts';
import { buildParams, rpcRoute } from './params.ts';
import { createDaemonService } from './service.ts';
import { configSchema, type DaemonSettings } from './settings.ts';

export default definePlugin<DaemonSettings>({
  id: 'daemon',
  version: VERSION,
  configSchema,
  setup(ctx) {
    const settings = ctx.config;
    const service = createDaemonService(settings, ctx.clock);
    const method = methodTable(settings.methods);
    ctx.services.provide('daemon', service);

    // Not a login gate (facts §2.1): a dead daemon is reported, never blocks the node.
    const dropCheck = ctx.health.register(
      'daemon',
      async () => {
        const info = await service.probe();
        return { ok: true, message: `${info.chain} chain at height ${info.blocks}`, detail: { blocks: info.blocks, headers: info.headers, chain: info.chain } };
      },
      { required: false, timeoutMs: settings.health.timeoutMs + 500 },
    );

    /** Call the daemon for a route; only public routes may be answered from the shared cache. */
    async function call<T = unknown>(input: HandlerInput, name: string, params: unknown[]): Promise<T> {
      try {
        return await service.call<T>(method(name), params, { cache: input.route.level === 'public', signal: input.signal });
      } catch (e) {
        throw toApiError(e);
      }
    }

    async function relay(input: HandlerInput) {
      const route = rpcRoute(input.route.meta, input.route.id);
      return call(input, route.rpc, buildParams(route, input));
    }

    return {
      handlers: { relay },
      dispose: () => dropCheck(),
    };
  },
});
