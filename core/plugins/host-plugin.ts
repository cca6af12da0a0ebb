/** Routes the host itself serves: the OpenAPI document and the operations resource. */
import { ApiError, definePlugin, reply, type HandlerInput } from '../plugin-api.ts';
import { buildOpenApi } from '../http/openapi.ts';
import type { Host } from '../host.ts';
import { VERSION } from '../version.ts';

export function hostPlugin(host: () => Host) {
  return definePlugin({
    id: 'host',
    version: VERSION,
    setup: (ctx) => ({
      handlers: {
        openapi: () => reply(200, buildOpenApi(host().routes, VERSION)),
        getOperation: ({ params, caller }: HandlerInput) => {
          const op = ctx.queue.get(params.jobId, caller.legacyid);
          if (!op) throw new ApiError(404, 'NotFound', 'No such operation (unknown, expired, or started by another caller)', 404);
          const { owner: _owner, ...view } = op;
          return view;
        },
        cancelOperation: ({ params, caller }: HandlerInput) => {
          const op = ctx.queue.cancel(params.jobId, caller.legacyid);
          if (!op) throw new ApiError(404, 'NotFound', 'No such operation (unknown, expired, or started by another caller)', 404);
          return { jobId: op.jobId, statusUrl: op.statusUrl, status: op.status, cancelRequested: op.status === 'Running' };
        },
      },
    }),
  });
}
