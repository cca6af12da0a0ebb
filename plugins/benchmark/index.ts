/**
 * The benchmark daemon relay (spec: Benchmark): status, results and info for anyone; restart of the
 * benchmarks, stop and node-broadcast signing for the operator (and team where the reference allows).
 */
import { VERSION, coreServices, definePlugin, type HandlerInput } from '../../core/plugin-api.ts';
import { createBenchmarkClient, methodOf, paramsOf, toApiError } from './relay.ts';
import { configSchema } from './settings.ts';

export default definePlugin({
  id: 'benchmark',
  version: VERSION,
  configSchema,
  deps: { health: coreServices.health },
  setup(ctx) {
    const settings = ctx.config;
    const client = createBenchmarkClient(settings);

    // Reported, never a login gate: a node without its benchmark daemon still serves its API.
    const dropCheck = ctx.health.register(
      'benchmark',
      async () => {
        const s = await client.call<{ status?: string; benchmarking?: string }>('getstatus', [], { timeoutMs: settings.health.timeoutMs });
        return { ok: true, message: `benchmark daemon ${s?.status ?? 'answers'}${s?.benchmarking ? `, ${s.benchmarking}` : ''}` };
      },
      { required: false, timeoutMs: settings.health.timeoutMs + 500 },
    );

    async function relay(input: HandlerInput) {
      const params = paramsOf(input);
      try {
        return await client.call(methodOf(input, settings.methods), params, { signal: input.signal });
      } catch (e) {
        throw toApiError(e);
      }
    }

    return { handlers: { relay }, dispose: () => dropCheck() };
  },
});
