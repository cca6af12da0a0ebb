/**
 * One shape for every specification version: v1-3 describe one container in the app itself, v4+ a compose
 * list. The installer, pricing and listings read only `AppSpec`.
 */

export interface Component {
  name: string;
  repotag: string;
  ports: number[];
  containerPorts: number[];
  environmentParameters: string[];
  commands: string[];
  containerData: string;
  cpu: number;
  ram: number;
  hdd: number;
  repoauth?: string;
}

export interface AppSpec {
  name: string;
  version: number;
  owner: string;
  description: string;
  instances: number;
  components: Component[];
  /** The specification as signed (kept to answer and to hash). */
  raw: Record<string, any>;
}

export function normalise(raw: Record<string, any>): AppSpec {
  const base = { name: raw.name, version: raw.version, owner: raw.owner, description: raw.description ?? '', instances: raw.instances ?? 3, raw };
  if (raw.version >= 4) {
    return {
      ...base,
      components: (raw.compose as any[]).map((c) => ({
        name: c.name,
        repotag: c.repotag,
        ports: c.ports ?? [],
        containerPorts: c.containerPorts ?? [],
        environmentParameters: c.environmentParameters ?? [],
        commands: c.commands ?? [],
        containerData: c.containerData ?? '',
        cpu: c.cpu,
        ram: c.ram,
        hdd: c.hdd,
        repoauth: c.repoauth,
      })),
    };
  }
  const v1 = raw.version === 1;
  return {
    ...base,
    components: [
      {
        name: raw.name,
        repotag: raw.repotag,
        ports: v1 ? [raw.port] : raw.ports,
        containerPorts: v1 ? [raw.containerPort] : raw.containerPorts,
        environmentParameters: raw.enviromentParameters ?? [],
        commands: raw.commands ?? [],
        containerData: raw.containerData ?? '',
        cpu: raw.cpu,
        ram: raw.ram,
        hdd: raw.hdd,
      },
    ],
  };
}

/** Where compose errors point: `compose[i].field` for v4+, the app's own field for v1-3. */
export function fieldOf(spec: AppSpec, i: number, field: string): string {
  if (spec.version >= 4) return `compose[${i}].${field}`;
  if (spec.version === 1 && field === 'ports') return 'port';
  if (spec.version === 1 && field === 'containerPorts') return 'containerPort';
  if (field === 'environmentParameters') return 'enviromentParameters';
  return field;
}
