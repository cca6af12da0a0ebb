/** Routes the host serves itself (manifests/host.yaml): the OpenAPI document and the operations resource. */
import { ApiError, VERSION, coreServices, definePlugin, reply, type HandlerInput } from '../plugin-api.ts';
import { buildOpenApi } from '../http/openapi.ts';
import type { BoundRoute } from '../http/chain.ts';

const NO_SUCH_OPERATION = 'No such operation (unknown, expired, or started by another caller)';

/**
 * The document of one route table, serialised once: building it per request (244 KB for the node's 515
 * routes) let pipelined `GET /openapi.json` grow the heap by 70 MB/s. A reload makes a new routes array,
 * so the cache follows the table and the old entry goes with it.
 */
const documents = new WeakMap<BoundRoute[], Buffer>();

export function openApiDocument(routes: BoundRoute[]): Buffer {
  let doc = documents.get(routes);
  if (!doc) {
    doc = Buffer.from(JSON.stringify(buildOpenApi(routes, VERSION)));
    documents.set(routes, doc);
  }
  return doc;
}

const JSON_TYPE = { 'Content-Type': 'application/json; charset=utf-8' };

/** `routes` reads the live route table, so the document always describes what is served. */
export function hostPlugin(routes: () => BoundRoute[]) {
  return definePlugin({
    id: 'host',
    version: VERSION,
    deps: { operations: coreServices.operations },
    setup: ({ operations }) => ({
      handlers: {
        openapi: () => reply(200, openApiDocument(routes()), JSON_TYPE),
        getOperation: ({ params, caller }: HandlerInput) => {
          const op = operations.get(params.jobId, caller.legacyid);
          if (!op) throw new ApiError(404, 'NotFound', NO_SUCH_OPERATION, 404);
          const { owner: _owner, ...view } = op;
          return view;
        },
        cancelOperation: ({ params, caller }: HandlerInput) => {
          const op = operations.cancel(params.jobId, caller.legacyid);
          if (!op) throw new ApiError(404, 'NotFound', NO_SUCH_OPERATION, 404);
          return { jobId: op.jobId, statusUrl: op.statusUrl, status: op.status, cancelRequested: op.status === 'Running' };
        },
      },
    }),
  });
}
