/**
 * Names and labels of what the node creates on Docker (reference section 6.2), and the one label filter
 * that keeps the node away from everything else on the Docker host.
 */

/** Labels on every container, network and image pull the node makes. */
export const LABEL_APP = 'corenode.app';
export const LABEL_COMPONENT = 'corenode.component';
export const LABEL_HASH = 'corenode.hash';
export const LABEL_MANAGED = 'corenode.managed';

/** `core<name>` unless the name already carries a vendor prefix. */
export function appIdentifier(app: string): string {
  return /^(core|legacy)/i.test(app) ? app : `core${app}`;
}

/** v1-3 apps are one container `core<app>`; v4+ components are `core<component>_<app>`. */
export function containerName(app: string, component: string, specVersion: number): string {
  return specVersion <= 3 ? appIdentifier(app) : `core${component}_${app}`;
}

export function networkName(app: string): string {
  return `coreDockerNetwork_${app}`;
}

/** `component_app` names one component; a bare name the whole app. */
export function splitAppName(name: string): { app: string; component?: string } {
  const i = name.indexOf('_');
  return i < 0 ? { app: name } : { app: name.slice(i + 1), component: name.slice(0, i) };
}

export function labelsFor(app: string, component: string, hash: string): Record<string, string> {
  return { [LABEL_MANAGED]: 'true', [LABEL_APP]: app, [LABEL_COMPONENT]: component, [LABEL_HASH]: hash };
}

/** dockerode filter: only what the node made. */
export const MANAGED_FILTER = JSON.stringify({ label: [`${LABEL_MANAGED}=true`] });
export const appFilter = (app: string) => JSON.stringify({ label: [`${LABEL_MANAGED}=true`, `${LABEL_APP}=${app}`] });
