/**
 * Websocket routes (`method: WS`): the upgrade request goes through the same refusals as the HTTP chain
 * (HTTPS only, removed, plugin, gate, level, params), answered as plain HTTP statuses since no envelope can
 * be sent before the handshake; then the handler owns the socket.
 */
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { WebSocketServer } from 'ws';
import { ANONYMOUS, type AuthService } from '../services/auth.ts';
import type { ChainServices } from './chain.ts';
import { ApiError, envelope, toErrorData } from './reply.ts';
import type { HandlerInput } from '../plugin-api.ts';
import type { RouteTable } from './table.ts';
import { ALL_PLACES, decideAppName, namesApp } from './app-name.ts';

const TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  410: 'Gone',
  503: 'Service Unavailable',
};

/**
 * A browser cannot set headers on a websocket, only subprotocols: the web interface offers
 * `legacyidauth, <the header value base64url-encoded>` (tokens only). The server picks the first offered
 * protocol (ws's default), `legacyidauth`, so the handshake succeeds; the session is never in the URL (logs).
 */
export function authFromProtocols(value: string | undefined): string | undefined {
  const [name, encoded] = (value ?? '').split(',').map((p) => p.trim());
  if (name !== 'legacyidauth' || !encoded || !/^[A-Za-z0-9_-]+$/.test(encoded)) return undefined;
  return Buffer.from(encoded, 'base64url').toString('utf8');
}

export interface UpgradeDeps {
  table: () => RouteTable | null;
  ready: () => boolean;
  svc: ChainServices;
  auth: AuthService;
  wss: WebSocketServer;
  log: Logger;
}

export async function handleUpgrade(deps: UpgradeDeps, req: http.IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
  const refuse = (status: number) => {
    socket.end(`HTTP/1.1 ${status} ${TEXT[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };
  socket.on('error', () => undefined); // a client that vanishes mid-handshake is not the node's error
  try {
    if (!deps.ready()) return refuse(503);
    const url = new URL(req.url ?? '/', 'http://node');
    const table = deps.table();
    const found = table?.ws.find('WS', url.pathname);
    const hit = found && { route: found.value, params: { ...found.params } };
    if (!hit) return refuse(404);
    const r = hit.route;
    const handler = r.handler;
    if (handler?.kind !== 'ws') return refuse(404); // bindManifests gives WS routes websocket handlers only
    const secure = (req.socket as { encrypted?: boolean }).encrypted === true;
    if (r.spec.httpsOnly && !secure) return refuse(403);
    if (r.spec.removed) return refuse(410);
    if (deps.svc.pluginRefusal(r.spec.plugin)) return refuse(503);
    if (r.spec.gate && !deps.svc.gates.holds(r.spec.gate)) return refuse(503);
    const auth = req.headers.legacyidauth ?? authFromProtocols(req.headers['sec-websocket-protocol']);
    const caller = auth ? await deps.auth.resolve(auth) : ANONYMOUS;
    const query = Object.fromEntries(url.searchParams);
    // The app the level is checked on is the one the handler gets (app-name.ts); two different ones: 400.
    let app: string | undefined;
    if (namesApp(r.spec.level)) {
      try {
        app = decideAppName(r.spec.appParam, { path: hit.params, query, body: undefined }, r.spec.input?.from ?? ALL_PLACES);
      } catch {
        return refuse(400);
      }
    }
    if (r.spec.level !== 'public' && !(await deps.auth.allows(r.spec.level, caller, app))) return refuse(401);
    if (r.validateParams && !r.validateParams(hit.params)) return refuse(400);
    let values: Record<string, any> | undefined;
    try {
      values = r.validateInput?.({ path: hit.params, query, body: undefined });
      if (values && app !== undefined) values[r.spec.appParam] = app;
    } catch {
      return refuse(400);
    }
    const input: HandlerInput = {
      params: hit.params,
      query,
      values: values ?? {},
      body: undefined,
      headers: req.headers,
      caller,
      route: r.info,
      ip: req.socket.remoteAddress ?? '',
      secure,
      signal: new AbortController().signal,
      checkpoint: () => {},
      progress: () => {},
    };
    deps.wss.handleUpgrade(req, socket, head, (ws) => {
      // A protocol error (a frame over maxPayload, bad UTF-8) is emitted as 'error': without a listener it
      // would end the process whenever a handler forgot one. The socket closes itself after it.
      ws.on('error', (err) => deps.log.debug({ err: err.message, route: r.spec.id }, 'websocket protocol error'));
      Promise.resolve()
        .then(() => handler.fn(input, ws))
        .catch((err) => {
          if (!(err instanceof ApiError)) deps.log.error({ err, route: r.spec.id }, 'websocket handler failed');
          ws.send(JSON.stringify(envelope.error(toErrorData(err))));
          ws.close(1011);
        });
    });
  } catch (err) {
    // A malformed path (bad percent-encoding) or a failing session lookup: refuse, never crash.
    deps.log.debug({ err }, 'websocket upgrade refused');
    refuse(400);
  }
}
