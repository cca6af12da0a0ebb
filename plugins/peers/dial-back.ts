/**
 * Dial-backs (the reference's `addoutgoingpeer`): a node short of incoming links asks another node to open a
 * link to it, by a call to that node's `/core/addoutgoingpeer/<this node's ip:port>`. The asked node opens
 * the link only when the call comes from that very IP and the node list has a node at that `ip:port`
 * (`addOutgoingPeer` below), so a call cannot make a node dial anyone but its caller.
 */
import { ApiError, type HandlerInput, type Log } from '../../core/plugin-api.ts';
import { canonicalIp, formatAddr, parseAddr } from '../../lib/net-addr/addr.ts';
import { callNode } from '../../lib/node-http/request.ts';
import type { Membership } from './membership.ts';
import type { PeerNode } from './protocol/node.ts';

/** The asking side: one call, its answer logged at debug (the next round asks again if still short). */
export function dialBackAsker(net: PeerNode, log: Log) {
  return (addr: string) => {
    const a = parseAddr(addr);
    if (!a) return;
    // Over HTTPS where that node offers it (lib/node-http), as every call between nodes.
    void callNode(a.ip, a.port, `/core/addoutgoingpeer/${encodeURIComponent(net.self)}`, { timeoutMs: 5_000, maxBytes: 4096 }).then(
      (r) => log.debug({ addr, status: r.status, body: r.text.slice(0, 200) }, 'peers: dial-back asked'),
      (e) => log.debug({ addr, err: (e as Error).message }, 'peers: dial-back not asked'),
    );
  };
}

/** The asked side: the route's handler. */
export function addOutgoingPeer(net: PeerNode, membership: Membership) {
  return async (input: HandlerInput) => {
    const raw: string | undefined = input.values.ip;
    if (!raw) throw new ApiError(400, 'BadRequest', 'No IP address specified.');
    const a = parseAddr(raw) ?? (canonicalIp(raw) ? { ip: canonicalIp(raw)!, port: net.cfg.port } : null);
    if (!a) throw new ApiError(400, 'BadRequest', `${raw.slice(0, 60)} is not an IP address with an optional port`);
    const addr = formatAddr(a.ip, a.port);
    const caller = canonicalIp(input.ip) ?? input.ip;
    if (caller !== a.ip) throw new ApiError(403, 'Forbidden', `Only the node at ${a.ip} may ask for a connection to ${addr}; this call comes from ${caller}`);
    const listed = await membership.listsAddress(a.ip, a.port);
    if (listed === null) throw new ApiError(503, 'NodeListUnavailable', 'The node list cannot be read; no connection opened');
    if (!listed) throw new ApiError(403, 'Forbidden', `${addr} is not a node of the node list`);
    const r = await net.connect(addr, 'dialback');
    if (r === 'initiated') return `Outgoing connection to ${addr} initiated`;
    if (r === 'already') return `Already connected to ${addr}`;
    if (r === 'self') throw new ApiError(400, 'BadRequest', `${addr} is this node`);
    throw new ApiError(503, 'PeerUnreachable', `Outgoing connection to ${addr} could not be opened`);
  };
}
