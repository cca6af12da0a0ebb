/**
 * The apps plugin's answers as the apps pages use them: an installed app's components (a version 3 spec is
 * its own single component, later versions list `compose`), the container each runs in, and who may run its
 * lifecycle routes (level appownerabove: the app's owner or the core team; the node's admin is not either).
 */
import type { Session } from '../session.ts';

export interface ComponentSpec {
  name: string;
  repotag: string;
  ports?: number[];
  containerPorts?: number[];
  cpu?: number;
  ram?: number;
  hdd?: number;
}

export interface InstalledApp {
  name: string;
  owner: string;
  version: number;
  description?: string;
  hash: string;
  installedAt?: number;
  compose?: ComponentSpec[];
  repotag?: string;
  ports?: number[];
  cpu?: number;
  ram?: number;
  hdd?: number;
  components: { name: string; container: string; desired?: string; stoppedReason?: string }[];
}

/** A container of `/apps/listrunningapps` (Docker's list entry, trimmed by the node). */
export interface Container {
  Names: string[];
  State: string;
  Status: string;
  Ports?: { PublicPort?: number; PrivatePort: number; Type: string }[];
}

export interface AppComponent extends ComponentSpec {
  container: string;
  /** The name the inside routes (logs, terminal, monitor) take for this component. */
  target: string;
  desired?: string;
}

export function componentsOf(app: InstalledApp): AppComponent[] {
  const specs: ComponentSpec[] = app.compose ?? [{ name: app.name, repotag: app.repotag ?? '', ports: app.ports, cpu: app.cpu, ram: app.ram, hdd: app.hdd }];
  return app.components.map((c, i) => {
    const spec = specs.find((s) => s.name === c.name) ?? specs[i] ?? { name: c.name, repotag: '' };
    return { ...spec, name: c.name, container: c.container, desired: c.desired, target: app.components.length > 1 ? `${c.name}_${app.name}` : app.name };
  });
}

/** The container's state from the running list: 'running' or 'not running'. */
export function stateOf(c: AppComponent, running: Container[] | undefined): string {
  if (!running) return '…';
  const found = running.find((r) => r.Names.includes(`/${c.container}`));
  return found ? found.State : 'not running';
}

export const mayManage = (app: InstalledApp, s: Session | null) => !!s && (s.legacyid === app.owner || s.privilege === 'coreteam');
