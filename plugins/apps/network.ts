/**
 * The apps plugin on the peer network (issue 17), used only when the peers plugin is enabled:
 * - registration and update messages submitted here are broadcast (`appmessage`); one received from a peer
 *   is checked and submitted to the registry like a local one (its owner's signature is checked there);
 *   each node makes it permanent when its own explorer sees the payment (no node takes another's word
 *   for a payment);
 * - installs starting and failing here are told on the event bus (`apps.installing`, `apps.installfailed`),
 *   which the peers plugin turns into the notices behind `/apps/installinglocation(s)` and
 *   `/apps/installingerrorslocation(s)`;
 * - the signed network policy this node takes is broadcast (`networkpolicy`); one from a peer is offered to
 *   the policy holder, which takes it only when it is valid and newer;
 * - lifecycle verbs with `global=true` carry the caller's wallet signature of the command (query `timestamp`
 *   and `signature`); once it is checked they run here (when installed) and go to every node that runs the
 *   app, each of which checks it again (plugins/peers/global.ts): the caller's session header never leaves
 *   this node.
 */
import { PassThrough, type Readable } from 'node:stream';
import { ApiError, Reply, reply, type HandlerInput, type Log, type PlainHandler } from '../../core/plugin-api.ts';
import type { PeerNetwork } from '../peers/api.ts';
import type { LifecycleVerb } from './api.ts';
import { splitAppName } from './names.ts';
import type { Installer } from './installer.ts';
import type { PolicyHolder } from './policy.ts';
import type { AppMessage, Registry } from './registry.ts';

type Peers = () => PeerNetwork | undefined;

export const LOCAL_VERBS: readonly LifecycleVerb[] = ['appstart', 'appstop', 'apprestart', 'appkill'];
/** Verbs whose answer streams progress (newline-delimited JSON); `force` travels with them. */
export const STREAMED_VERBS: readonly LifecycleVerb[] = ['appremove', 'redeploy'];

/**
 * Run `fn` with the peer network once it is there: plugins are set up in dependency order and an optional
 * dependency imposes none, so the peers plugin may come up after this one. Answers the stop function.
 */
export function whenPeers(peers: Peers, fn: (net: PeerNetwork) => () => void): () => void {
  let off: (() => void) | null = null;
  const timer = setInterval(() => {
    const net = peers();
    if (net && !off) {
      off = fn(net);
      clearInterval(timer);
    }
  }, 200);
  timer.unref();
  return () => {
    clearInterval(timer);
    off?.();
  };
}

export function relayRegistry(registry: Registry, peers: Peers, check: (spec: Record<string, any>) => void, log: Log): () => void {
  const submit = registry.submit.bind(registry);
  registry.submit = async (m: AppMessage, kind: 'register' | 'update') => {
    const hash = await submit(m, kind);
    void peers()?.broadcast('appmessage', { message: m, kind });
    return hash;
  };
  return whenPeers(peers, (net) => net.on<{ message: AppMessage; kind: 'register' | 'update' }>('appmessage', (msg) => {
    const { message, kind } = msg.payload ?? ({} as any);
    if (!message || typeof message !== 'object' || (kind !== 'register' && kind !== 'update')) return;
    void (async () => {
      try {
        check(message.appSpecification);
        await submit(message, kind);
      } catch (e) {
        log.info({ err: (e as Error).message, origin: msg.origin }, 'apps: an app message from a peer was not taken');
      }
    })();
  }));
}

/** Tell the event bus when an install starts and when it fails (the installer's own steps are unchanged). */
export function announceInstalls(installer: Installer, emit: (name: string, data: Record<string, unknown>) => void): void {
  const install = installer.install.bind(installer);
  installer.install = async (spec, hash, progress, opts) => {
    emit('apps.installing', { app: spec.name, hash });
    try {
      return await install(spec, hash, progress, opts);
    } catch (e) {
      emit('apps.installfailed', { app: spec.name, hash, error: (e as Error).message });
      throw e;
    }
  };
}

export function relayPolicy(policy: PolicyHolder, peers: Peers, log: Log): { changed(): void; off(): void } {
  // Only a policy taken from a source is broadcast; one from a peer travels on by the gossip itself.
  const changed = () => {
    const held = policy.held;
    if (held && !held.source.startsWith('peer ')) void peers()?.broadcast('networkpolicy', held.signed);
  };
  const off = whenPeers(peers, (net) => {
    changed(); // the policy taken before the network was up (kept for the peers' catch-up)
    return net.on('networkpolicy', (msg) => {
      void policy.offer(msg.payload, `peer ${msg.origin.slice(0, 16)}`).catch((e) => log.info({ err: (e as Error).message }, 'apps: a network policy from a peer was refused'));
    });
  });
  return { changed, off };
}

/**
 * Lifecycle handlers that honour `global`: run here when the app is installed here, then send the command
 * to the network. Answers what ran here and the command's id (outcomes: the nodes' `appcommandresult`).
 * `appremove` and `redeploy` answer their progress stream when the app is installed here, its first line
 * `{status: 'global', message, commandId}`; the command is sent only once this node's own work took the
 * install slot (a busy node refuses the whole command, 409, and sends nothing).
 */
export function withGlobal(handlers: Record<string, PlainHandler>, peers: Peers, onGlobalRemove: (app: string) => Promise<void> = async () => {}): Record<string, PlainHandler> {
  const out: Record<string, PlainHandler> = {};
  for (const verb of [...LOCAL_VERBS, ...STREAMED_VERBS]) {
    const local = handlers[verb];
    out[verb] = async (input: HandlerInput) => {
      // The route's checked input (`global` converted to a boolean: the path segment 'false' is text).
      const v = input.values;
      if (!v.global) return local(input);
      const net = peers();
      if (!net) throw new ApiError(503, 'PeersUnavailable', 'The peer network is not enabled on this node: a global command cannot be sent');
      if (!input.caller.legacyid) throw new ApiError(401, 'Unauthorized', 'Unauthorized. Access denied.');
      const target = String(v.appname);
      const app = splitAppName(target).app;
      const force = STREAMED_VERBS.includes(verb) ? !!v.force : undefined;
      // The caller's wallet signature of the command (query `timestamp` and `signature`) is checked by the
      // peer network before anything runs here, and again by every node that receives it.
      const { id, here } = await net.runGlobal({ verb, app: target, caller: input.caller.legacyid, timestamp: v.timestamp, signature: v.signature, ...(force !== undefined ? { force } : {}) }, async () => {
        try {
          return await local(input);
        } catch (e) {
          if (!(e instanceof ApiError) || e.code !== 404) throw e;
          return { message: `Application ${v.appname} is not installed on this node` };
        }
      });
      // A global remove of the whole app withdraws it from placement here too (the other nodes on receipt).
      if (verb === 'appremove' && target === app) await onGlobalRemove(app);
      const nodes = (await net.locations(app)).filter((l) => l.node !== net.nodeKey).length;
      const message = `Global ${verb} of ${app} sent to the ${nodes} other node(s) that run it`;
      if (here instanceof Reply && isStream(here.body)) {
        const body = new PassThrough();
        body.write(`${JSON.stringify({ status: 'global', message, commandId: id })}\n`);
        here.body.pipe(body);
        return reply(here.status, body, here.headers);
      }
      return { message, here, commandId: id };
    };
  }
  return out;
}

const isStream = (b: unknown): b is Readable => !!b && typeof (b as Readable).pipe === 'function';

/** The last line of a progress stream: `{status: 'success' | 'error', message}`. */
export async function lastLine(body: Readable): Promise<{ status?: string; message?: string }> {
  let text = '';
  for await (const chunk of body) text = (text + chunk.toString()).slice(-64 * 1024);
  const lines = text.trim().split('\n');
  try {
    return JSON.parse(lines[lines.length - 1] ?? '{}');
  } catch {
    return { status: 'error', message: 'no final status in the progress' };
  }
}

/** `runVerb` of the apps service: a verb's handler called as its route would, for a command from a peer. */
export function verbRunner(handlers: Record<string, PlainHandler>) {
  return async (verb: LifecycleVerb, app: string, opts: { force?: boolean } = {}): Promise<string> => {
    const streamed = STREAMED_VERBS.includes(verb);
    if (!LOCAL_VERBS.includes(verb) && !streamed) throw new Error(`${verb} is not run from a global command on this node`);
    // As the route's checked input would give it (handlers read `values`, never raw path text).
    const values = { appname: app, ...(streamed ? { force: !!opts.force } : {}) };
    const r = await handlers[verb]({ params: values, query: {}, values, headers: {} } as unknown as HandlerInput);
    if (r instanceof Reply && isStream(r.body)) {
      // The work runs to its end whether or not anyone reads; its last line says how it ended.
      const end = await lastLine(r.body);
      if (end.status !== 'success') throw new Error(end.message ?? `${verb} ${app} failed`);
      return end.message ?? `${verb} ${app} done`;
    }
    return (r as { message?: string })?.message ?? `${verb} ${app} done`;
  };
}

/**
 * `/apps/placementlocations` with the places the other nodes announce (their `apprunning` notices carry
 * them): each joins `faultDomains`, `tiers` and `peers` under its address.
 */
export function withPeerPlaces(handlers: Record<string, PlainHandler>, peers: Peers): Record<string, PlainHandler> {
  const local = handlers.placementlocations;
  return {
    placementlocations: async (input: HandlerInput) => {
      const here = (await local(input)) as {
        faultDomains: { id: string; nodes: string[] }[];
        tiers: Record<string, string[]>;
        peers: unknown[];
      };
      const net = peers();
      if (!net) return here;
      for (const p of await net.nodes()) {
        if (p.node === net.nodeKey || !p.place) continue;
        const id = p.ip;
        const fd = p.place.faultDomain || id;
        const dom = here.faultDomains.find((f) => f.id === fd);
        if (dom) dom.nodes.push(id);
        else here.faultDomains.push({ id: fd, nodes: [id] });
        (here.tiers[p.place.tier] ??= []).push(id);
        here.peers.push({ ...p.place, ip: id, node: p.node, broadcastedAt: p.broadcastedAt });
      }
      return here;
    },
  };
}
