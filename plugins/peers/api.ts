/**
 * The peer network's public contract for other plugins (apps, file sync): `deps: { peers: optional(peerNetwork) }`.
 * Messages are signed by the sending node, de-duplicated and hop-limited; a handler sees each message once.
 */
import { createServiceRef } from '../../core/plugin-api.ts';
import type { LifecycleVerb, NodePlaceView } from '../apps/api.ts';

export interface PeerMessage<T = unknown> {
  type: string;
  payload: T;
  /** The public key of the node that first sent it. */
  origin: string;
  /** When the origin sent it (ms since the epoch). */
  sentAt: number;
}

/** Where an app runs, as its node reported it. */
export interface AppLocation {
  name: string;
  hash: string;
  /** The node's address as peers reach it: `ip` or `ip:apiport`. */
  ip: string;
  /** The node's public key. */
  node: string;
  broadcastedAt: number;
  runningSince: number;
}

/** What this node heard of one app's nodes, with when it heard each (its own clock): the placement loop's input. */
export interface AppHeard {
  /** `fixed`: the node's notice says it does not take part in placement (it keeps what it runs). */
  running: { node: string; ip: string; runningSince: number; heardAt: number; fixed?: boolean }[];
  /** `announcedAt`: the installer's first announcement of the install (its clock). */
  installing: { node: string; ip: string; announcedAt: number; heardAt: number }[];
  errors: { node: string; at: number; error: string }[];
}
/** Per app name; only live entries (heard within `peers.locationTtlMs`), this node's own notices included. */
export type AppsHeard = Map<string, AppHeard>;

/** A lifecycle verb for every node that runs an app (see plugins/peers/global.ts for who may send it). */
export interface GlobalCommand {
  id: string;
  verb: LifecycleVerb;
  /** What the verb acts on: the app's name, or `component_app` for one component. */
  app: string;
  /** The caller's wallet id: the session of the node it called, and the signer of `signature`. */
  caller: string;
  force?: boolean;
  /** When the caller signed the command (ms since the epoch). */
  timestamp: number;
  /** The caller's wallet signature of `globalCommandText` of this command (command-signatures.ts). */
  signature: string;
  issuedAt: number;
  /** The sending node's node-list key and IP, signed by that key over its link key (membership nodelist). */
  sender?: { pubKey: string; ip: string; sig: string };
}

/** What one node made of a global command. */
export interface GlobalOutcome {
  id: string;
  app: string;
  verb: LifecycleVerb;
  /** The public key of the node that ran (or refused) it. */
  node: string;
  ok: boolean;
  message: string;
}

/** One open link to another node. */
export interface PeerLink {
  /** Where the peer is reached: its IP and API port (the peer protocol runs on the API port). */
  ip: string;
  port: number;
  /** `outbound`: this node dialled it; `inbound`: it dialled this node. */
  direction: 'outbound' | 'inbound';
  /** The peer's public key. */
  nodeKey: string;
}

export interface PeerNetwork {
  /** This node's public key. */
  readonly nodeKey: string;
  /** Send a message to every node in the network. */
  broadcast(type: string, payload: unknown): Promise<void>;
  /** Receive messages of one type from the network (not the node's own); returns the unsubscribe function. */
  on<T = unknown>(type: string, handler: (msg: PeerMessage<T>) => void): () => void;
  /** The nodes that run an app (from the running notices they broadcast). */
  locations(app: string): Promise<AppLocation[]>;
  /**
   * A global lifecycle command whose caller passed the route's session check here: its signature is checked
   * (a 400 naming `signature` or `timestamp` when it does not hold), then `here` runs (this node's own part;
   * when it throws, nothing is sent and the command may be sent again), then the command goes to the network.
   */
  runGlobal<T>(cmd: Omit<GlobalCommand, 'id' | 'issuedAt' | 'sender'>, here: () => Promise<T>): Promise<{ id: string; here: T }>;
  /** The nodes heard from by their running notices, with the place each announced (when it runs the apps plugin). */
  nodes(): Promise<{ node: string; ip: string; place: NodePlaceView | null; broadcastedAt: number }[]>;
  /** Per app, the nodes running, installing and failing to install it, live ones only (placement). */
  heard(): AppsHeard;
  /** This node's address as peers reach it (`ip:port`), '' while it does not know it. */
  address(): string;
  /** Outcomes of global commands reported back by the nodes that ran them. */
  globalOutcomes(id: string): GlobalOutcome[];
  /** The open links (past their handshake). */
  links(): PeerLink[];
  /** What `/core/checkcommunication` names: each shortfall against `peers.minimums`; empty when there are enough peers. */
  shortfalls(): string[];
}

export const peerNetwork = createServiceRef<PeerNetwork>('peers');

/**
 * What the caller of a global command signs with its wallet: one field a line. `app` is the app's name,
 * `target` what the verb acts on (the app's name again, or `component_app`), `force` false for the verbs
 * without it, `timestamp` ms since the epoch on the caller's clock.
 */
export const globalCommandText = (c: { verb: string; app: string; force?: boolean; timestamp: number }) =>
  `corenode global command\nverb: ${c.verb}\napp: ${c.app.includes('_') ? c.app.slice(c.app.indexOf('_') + 1) : c.app}\ntarget: ${c.app}\nforce: ${!!c.force}\ntimestamp: ${c.timestamp}`;
