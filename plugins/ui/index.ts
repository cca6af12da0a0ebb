/**
 * The web interface: serves the single-page app built from ui/ (scripts/build.mjs bundles it into
 * dist/ui/) at / of the API port, and optionally on the UI port (`ui.port`). It has no state and calls
 * nothing: the page talks to the node's routes itself, with the caller's session.
 */
import { VERSION, configSchema, coreServices, definePlugin, reply, type HandlerInput } from '../../core/plugin-api.ts';
import { loadBuiltUi } from './assets.ts';
import { assetAnswer, indexAnswer, type Answer } from './page.ts';
import { listenUiPort, type UiPort } from './ui-port.ts';

export interface UiConfig {
  /** Also serve the page on a port of its own: `true` is the API port − 1 (the reference's), a number that port; false: only at / of the API port. */
  port: boolean | number;
}

const header = (h: HandlerInput['headers'], name: string) => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

const toReply = (a: Answer) => reply(a.status, a.body, a.headers);

export default definePlugin({
  id: 'ui',
  version: VERSION,
  configSchema: configSchema<UiConfig>({
    type: 'object',
    additionalProperties: false,
    properties: {
      port: { anyOf: [{ type: 'boolean' }, { type: 'integer', minimum: 1, maximum: 65535 }], default: false },
    },
  }),
  deps: { node: coreServices.node, log: coreServices.log },
  async setup(ctx) {
    const ui = loadBuiltUi();
    if (!ui) ctx.log.warn({}, 'the web interface is not built (dist/ui/ is missing): / answers how to build it');
    let uiPort: UiPort | null = null;
    if (ctx.config.port !== false) {
      const port = ctx.config.port === true ? ctx.node.apiPort - 1 : ctx.config.port;
      uiPort = await listenUiPort({ port, host: ctx.node.apiHost, api: { port: ctx.node.apiPort, tls: ctx.node.apiTls }, ui, log: ctx.log });
    }
    return {
      handlers: {
        index: ({ headers }: HandlerInput) => toReply(indexAnswer(ui, header(headers, 'host'))),
        asset: ({ params, headers }: HandlerInput) => toReply(assetAnswer(ui, String(params.file), header(headers, 'accept-encoding'))),
      },
      dispose: () => uiPort?.close(),
    };
  },
});
