/**
 * The apps plugin's public contract for other plugins (volumes, file sync, the peer network):
 * `deps: { apps: appsService }`. What runs on this node, where each component's volume is mounted, and
 * stopping and starting a component the way an owner's appstop/appstart does (the reconciler keeps it so).
 */
import { createServiceRef } from '../../core/plugin-api.ts';

/** The rule that no message or record carries registry credentials (repoauth.ts), for the peer network. */
export { carriesRepoauth, REPOAUTH_IS_PUBLIC } from './repoauth.ts';

export interface AppComponentView {
  name: string;
  /** The Docker container's name. */
  container: string;
  desired: 'running' | 'stopped';
  /** The component's `containerData` as the specification has it (`/data`, `r:/data`, `g:/data|0:/x`...). */
  containerData: string;
  /** The host folder the component's volume is mounted on; its primary data is `<mountpoint>/appdata`. */
  mountpoint: string;
  /** Whether the volume is mounted now (never read or share the folder of an unmounted volume). */
  mounted: boolean;
  /**
   * Names at the volume root the node binds into containers (`appdata`, the `m:`/`f:` names): Docker follows
   * links in them, so no file operation may move, rename, remove or replace them.
   */
  mountRoots: string[];
}

export interface InstalledAppView {
  name: string;
  owner: string;
  hash: string;
  version: number;
  installedAt: number;
  specification: Record<string, any>;
  components: AppComponentView[];
}

/** The lifecycle verbs a global command may carry (issue 17). */
export type LifecycleVerb = 'appstart' | 'appstop' | 'apprestart' | 'appkill' | 'appremove' | 'redeploy';

export interface AppsService {
  /** An app installed on this node, or null. */
  installed(name: string): Promise<InstalledAppView | null>;
  /** Every app installed on this node. */
  list(): Promise<InstalledAppView[]>;
  /** The registered (global) specification of an app, with its hash, or null. */
  registered(name: string): Promise<{ hash: string; specification: Record<string, any> } | null>;
  /** Stop a component's container and keep it stopped (as `appstop` does). */
  stopComponent(app: string, component: string): Promise<void>;
  /** Start a component's container and keep it running (as `appstart` does). */
  startComponent(app: string, component: string): Promise<void>;
  /** Run a lifecycle verb on an app installed here, as its route does (global commands from peers); answers its message. */
  runVerb(verb: LifecycleVerb, app: string, opts?: { force?: boolean }): Promise<string>;
  /**
   * A global remove of the whole app by its owner or the core team (checked by the caller): no node places
   * it again until its specification changes. Every node that hears the command calls it, running the app
   * or not.
   */
  withdraw(app: string): Promise<void>;
  /** This node's place (tier, geography, fault domain, resources) as /apps/placementlocations shows it; peers announce it. */
  place(): Promise<NodePlaceView>;
}

export interface NodePlaceView {
  ip: string;
  tier: string;
  geolocation: { continent: string; country: string; region: string };
  faultDomain: string;
  staticIp: boolean;
  resources: { total: Record<string, number>; locked: Record<string, number>; free: Record<string, number> };
  /** Whether this node takes part in placement (false: its operator turned it off; it keeps what it runs). */
  placement?: boolean;
}

export const appsService = createServiceRef<AppsService>('apps');
