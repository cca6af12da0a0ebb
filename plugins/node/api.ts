/**
 * The node plugin's public contract for other plugins (apps): `deps: { nodePorts: optional(nodePorts) }`.
 * Ports other plugins need reachable from outside (an app's host ports) are opened on the node's firewall
 * and mapped on its UPnP router while at least one owner holds them (app-ports.ts).
 */
import { createServiceRef } from '../../core/plugin-api.ts';

/**
 * What is done about one port on the firewall: `open` (the rule is there), `closed`, `skipped` (no firewall
 * tool configured: `node.firewall.tool: none`), `failed` (see `lastError`; tried again at the next round),
 * `pending` (known from the store, not tried yet since the node started).
 */
export type FirewallState = 'open' | 'closed' | 'skipped' | 'failed' | 'pending';

/** The same on the router: `mapped` (TCP and UDP), `unmapped`, `disabled` (`node.upnp.enabled: false`), `failed`, `pending`. */
export type UpnpState = 'mapped' | 'unmapped' | 'disabled' | 'failed' | 'pending';

export interface PortState {
  port: number;
  /** Who holds the port open (the apps plugin: `app:<name>`); it is closed once none is left. */
  owners: string[];
  firewall: FirewallState;
  upnp: UpnpState;
  /** The last failure of either part and when (ms since the epoch); null once both worked. */
  lastError: { message: string; at: number } | null;
}

/** The port's state once `open` tried (a failure is in the state, never thrown). */
export type OpenResult = PortState;
/** The port's state once `close` tried: still `open` while other owners hold it. */
export type CloseResult = PortState;

export interface NodePorts {
  /**
   * Adds `owner` to the port's owners (kept across restarts) and makes sure the port is allowed in and out
   * on the firewall and mapped on the router, TCP and UDP. Throws only for a bad port or owner.
   */
  open(port: number, owner: string): Promise<OpenResult>;
  /** Removes `owner`; when no owner is left, the port's firewall rules and mappings are removed. */
  close(port: number, owner: string): Promise<CloseResult>;
  /** Every port held or still being closed, by port number. */
  list(): PortState[];
}

export const nodePorts = createServiceRef<NodePorts>('node.ports');
