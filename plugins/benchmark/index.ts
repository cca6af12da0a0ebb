/**
 * The benchmark daemon relay (spec: Benchmark): status, results and info for anyone; restart of the
 * benchmarks, stop and node-broadcast signing for the operator (and team where the reference allows).
 * The client is the bitcoin-family daemons' one (lib/daemon-rpc); each route's input is declared in its
 * manifest and validated by the host, and its `x` block names the call and the order of its parameters.
 */
import { VERSION, coreServices, definePlugin, type HandlerInput } from '../../core/plugin-api.ts';
import { createDaemonClient } from '../../lib/daemon-rpc/client.ts';
import { localPorts } from '../../lib/daemon-rpc/endpoint.ts';
import { toApiError } from '../../lib/daemon-rpc/errors.ts';
import { BENCHMARK_METHODS, methodTable } from '../../lib/daemon-rpc/methods.ts';
import { BENCHMARK_PROFILE, configSchema } from './settings.ts';

const NAME = { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' };

export default definePlugin({
  id: 'benchmark',
  version: VERSION,
  configSchema,
  deps: { health: coreServices.health, ports: coreServices.ports },
  /** `x: { rpc, params }`: the spec's name of the call (the route name when absent), its input keys in order. */
  routeData: {
    type: 'object',
    additionalProperties: false,
    properties: { rpc: { type: 'string', pattern: '^[a-z0-9_]{1,64}$' }, params: { type: 'array', items: NAME, maxItems: 16 } },
  },
  setup(ctx) {
    const settings = ctx.config;
    const client = createDaemonClient(settings, BENCHMARK_PROFILE);
    const method = methodTable(BENCHMARK_METHODS, settings.methods);
    const dropPorts = ctx.ports.claim('the benchmark daemon (RPC and P2P)', localPorts(settings, BENCHMARK_PROFILE));

    // Reported, never a login gate: a node without its benchmark daemon still serves its API.
    const dropCheck = ctx.health.register(
      'benchmark',
      async () => {
        const s = await client.health<{ status?: string; benchmarking?: string }>('getstatus', []);
        return { ok: true, message: `benchmark daemon ${s?.status ?? 'answers'}${s?.benchmarking ? `, ${s.benchmarking}` : ''}` };
      },
      { required: false, timeoutMs: settings.health.timeoutMs + 500 },
    );

    async function relay(input: HandlerInput) {
      const x = input.route.meta as { rpc?: string; params?: string[] };
      const params = (x.params ?? []).map((name) => input.values[name]);
      while (params.length && params[params.length - 1] === undefined) params.pop();
      const name = x.rpc ?? input.route.id.slice(input.route.id.indexOf('.') + 1);
      const lane = input.caller.isAdmin || input.caller.isCoreTeam ? 'priority' : 'public';
      try {
        return await client.call(method(name), params, { signal: input.signal, lane });
      } catch (e) {
        throw toApiError(e, 'Benchmark', 'benchmark daemon');
      }
    }

    return {
      handlers: { relay },
      dispose: () => {
        dropPorts();
        dropCheck();
        client.close();
      },
    };
  },
});
