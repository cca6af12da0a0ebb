/**
 * The reference's UI port (the API port − 1, or a port the operator names): the same page and assets on
 * a small listener of their own, for bookmarks and gateways that expect the UI there. The page then calls
 * the API port of the same host (the host's CORS default trusts exactly this origin, `api.corsOrigins: [ui]`).
 * Only GET and HEAD of the page and the assets; anything else is 404.
 */
import http from 'node:http';
import type { Log } from '../../core/plugin-api.ts';
import type { BuiltUi } from './assets.ts';
import { assetAnswer, indexAnswer, type Answer, type ApiOrigin } from './page.ts';

const ASSET = /^\/ui\/assets\/([A-Za-z0-9_-]+\.(?:js|css|svg))$/;

export interface UiPort {
  port: number;
  close(): Promise<void>;
}

export async function listenUiPort(opts: { port: number; host: string; api: ApiOrigin; ui: BuiltUi | null; log: Log }): Promise<UiPort | null> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    let a: Answer;
    if (req.method !== 'GET' && req.method !== 'HEAD') a = { status: 405, body: 'Method Not Allowed\n', headers: { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' } };
    else if (path === '/' || path === '/index.html') a = indexAnswer(opts.ui, req.headers.host, opts.api);
    else {
      const m = ASSET.exec(path);
      a = m ? assetAnswer(opts.ui, m[1], req.headers['accept-encoding']) : { status: 404, body: 'Not Found\n', headers: { 'Content-Type': 'text/plain; charset=utf-8' } };
    }
    res.writeHead(a.status, { ...a.headers, 'Content-Length': Buffer.byteLength(a.body) });
    res.end(req.method === 'HEAD' ? undefined : a.body);
  });
  server.keepAliveTimeout = 5000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  const ok = await new Promise<boolean>((resolve) => {
    server.once('error', (err) => {
      opts.log.error({ err, port: opts.port }, 'the web interface could not listen on its UI port; it is still served at / of the API port');
      resolve(false);
    });
    server.listen(opts.port, opts.host, () => resolve(true));
  });
  if (!ok) return null;
  const port = (server.address() as { port: number }).port;
  opts.log.info({ port }, 'web interface on its UI port');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
