/**
 * Docker operations of the apps plugin through dockerode. Everything it makes carries the node's labels
 * (names.ts) and every listing filters on them: the node touches nothing else on the Docker host.
 */
import type Docker from 'dockerode';
import http from 'node:http';
import { Module, createRequire } from 'node:module';
import path from 'node:path';
import { LABEL_APP, LABEL_MANAGED, MANAGED_FILTER, appFilter, containerName, labelsFor, networkName } from './names.ts';
import { checkBindSources, MountRefused } from './bind-check.ts';
import { parseContainerData } from './spec-rules.ts';
import { checkRegistryBeforePull, type RegistryRules } from './image-host.ts';
import type { AppSpec, Component } from './spec.ts';
import type { Volumes } from './volumes.ts';
import type { Secrets } from './secrets.ts';

const MiB = 1024 * 1024;
/** Reference limit: images over 5 GB are refused. */
export const MAX_IMAGE_BYTES = 5 * 1024 ** 3;

export type Progress = (o: Record<string, unknown>) => void;

export interface EngineOptions {
  socketPath: string;
  /** First two octets of the app networks (`172.23` -> 172.23.<n>.0/24, n in 1-255). */
  subnetBase: string;
  /** Host address published ports bind to. */
  publishHost: string;
  nodeHostIp: string;
  /** Open-file limit of each container (reference 100000; a host whose hard limit is lower needs less). */
  nofile: number;
  /** Which registries images may come from, judged again right before every pull (image-host.ts). */
  registries: RegistryRules;
  /** A pull with no progress for this long is aborted (default 120 s). */
  pullStallMs?: number;
}

const require = createRequire(import.meta.url);

/**
 * dockerode requires its BuildKit session support at load (lib/session.js: @grpc/grpc-js,
 * @grpc/proto-loader, protobufjs), used only by image builds with `version: '2'`, which the node never
 * makes. A stand-in that refuses takes its place in the module cache before dockerode loads: its load went
 * from 255 to 143 ms of CPU (measured), and grpc's code stays out of memory. Where dockerode lays its
 * files out otherwise, it loads as it is.
 */
function loadDockerode(): typeof Docker {
  try {
    const session = createRequire(require.resolve('dockerode'))
      .resolve('./session.js');
    require.cache[session] ??= Object.assign(new Module(session), {
      filename: session,
      loaded: true,
      exports: () => {
        throw new Error('BuildKit sessions are not used by the node');
      },
    });
  } catch {
    // no such file: nothing to stand in for
  }
  return require('dockerode') as typeof Docker;
}

export class Engine {
  #docker?: Docker;
  /** Told of every create or start the bind check refused (the plugin records it as tampering). */
  onMountRefused: (e: MountRefused) => void = () => {};

  constructor(
    readonly o: EngineOptions,
    readonly volumes: Volumes,
    /** Opens sealed `repoauth` values for a pull (secrets.ts); without it they are used as given. */
    private readonly secrets?: Secrets,
  ) {
  }

  /**
   * dockerode, loaded on first use: imported at start it cost the node about 0.23 s of CPU and 20 MB of RSS
   * (it loads ssh2, whose WebAssembly alone holds 17 MB, and gRPC; measured), which a node whose Docker is
   * not there never needs. The rounds begin with listManaged(), which asks Docker first (below).
   */
  get docker(): Docker {
    return (this.#docker ??= new (loadDockerode())({ socketPath: this.o.socketPath }));
  }

  /**
   * Until dockerode is loaded: GET /_ping over the socket, failing as a dockerode call would (the connect
   * error) while Docker is not there, so the reconciler's rounds on such a node never load it.
   */
  private reachable(): Promise<void> {
    if (this.#docker) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const req = http.get({ socketPath: this.o.socketPath, path: '/_ping', timeout: 10_000 }, (res) => {
        res.resume();
        resolve();
      });
      req.on('timeout', () => req.destroy(new Error(`Docker at ${this.o.socketPath} did not answer /_ping within 10 s`)));
      req.on('error', reject);
    });
  }

  async ping(): Promise<void> {
    await this.docker.ping();
  }

  async listManaged(all = true) {
    await this.reachable();
    return this.docker.listContainers({ all, filters: MANAGED_FILTER });
  }

  listApp(app: string) {
    return this.docker.listContainers({ all: true, filters: appFilter(app) });
  }

  /** The app's network, made on the lowest free /24 under the subnet base when missing. */
  async ensureNetwork(app: string): Promise<{ name: string; created: boolean }> {
    const name = networkName(app);
    const nets = await this.docker.listNetworks();
    if (nets.some((n) => n.Name === name)) return { name, created: false };
    const used = new Set<string>();
    for (const n of nets) for (const c of n.IPAM?.Config ?? []) if (c.Subnet) used.add(c.Subnet);
    for (let i = 1; i <= 255; i++) {
      const subnet = `${this.o.subnetBase}.${i}.0/24`;
      if (used.has(subnet)) continue;
      try {
        await this.docker.createNetwork({
          Name: name,
          Driver: 'bridge',
          CheckDuplicate: true,
          IPAM: { Config: [{ Subnet: subnet, Gateway: `${this.o.subnetBase}.${i}.1` }] },
          Labels: { [LABEL_MANAGED]: 'true', [LABEL_APP]: app },
        });
        return { name, created: true };
      } catch (e) {
        // Another network took the subnet meanwhile (or overlaps a route): try the next one.
        if (!/overlap|already|in use/i.test((e as Error).message)) throw e;
      }
    }
    throw new Error(`no free ${this.o.subnetBase}.<n>.0/24 network left for ${app}`);
  }

  async removeNetwork(app: string): Promise<void> {
    const nets = await this.docker.listNetworks({ filters: JSON.stringify({ label: [`${LABEL_MANAGED}=true`, `${LABEL_APP}=${app}`] }) });
    for (const n of nets) await this.docker.getNetwork(n.Id).remove().catch((e) => ignore404(e));
  }

  async hasImage(repotag: string): Promise<boolean> {
    try {
      await this.docker.getImage(repotag).inspect();
      return true;
    } catch {
      return false;
    }
  }

  /** Pull with progress; `repoauth` is `user:password` (sealed at rest) for the image's registry. */
  /**
   * Pull with progress; a pull that reports no progress for `pullStallMs` is aborted (the request to Docker
   * closed, which makes dockerd cancel it): a registry that trickles its answers or never ends one held the
   * node's install slot for as long as it liked. `signal` aborts the pull too, with its reason.
   */
  async pull(repotag: string, sealedAuth: string | undefined, progress: Progress, signal?: AbortSignal): Promise<void> {
    await checkRegistryBeforePull(repotag, this.o.registries);
    const stalled = new AbortController();
    const stallMs = this.o.pullStallMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => stalled.abort(new Error(`the pull of ${repotag} made no progress for ${stallMs / 1000} s; aborted (apps.pullStallSeconds)`)), stallMs);
    };
    const abortSignal = signal ? AbortSignal.any([signal, stalled.signal]) : stalled.signal;
    const why = (e: unknown) => (abortSignal.aborted ? (abortSignal.reason as Error) : e);
    arm();
    try {
      await this.pullOnce(repotag, sealedAuth, progress, abortSignal, arm);
    } catch (e) {
      throw why(e);
    } finally {
      clearTimeout(timer);
    }
    const info = await this.docker.getImage(repotag).inspect();
    if (info.Size > MAX_IMAGE_BYTES) throw new Error(`image ${repotag} is ${info.Size} bytes, over the 5 GB limit`);
  }

  private async pullOnce(repotag: string, sealedAuth: string | undefined, progress: Progress, abortSignal: AbortSignal, progressed: () => void): Promise<void> {
    const opts: Record<string, unknown> = { abortSignal };
    if (sealedAuth) {
      // Opened only here, in memory, for Docker's auth config.
      const repoauth = this.secrets ? this.secrets.open(sealedAuth) : sealedAuth;
      const i = repoauth.indexOf(':');
      const first = repotag.split('/')[0];
      const serveraddress = first.includes('.') || first.includes(':') ? first : 'https://index.docker.io/v1/';
      opts.authconfig = { username: repoauth.slice(0, i), password: repoauth.slice(i + 1), serveraddress };
    }
    const stream = await this.docker.pull(repotag, opts);
    await new Promise<void>((resolve, reject) => {
      // followProgress does not see a stream destroyed by the abort: the abort ends the wait itself.
      const aborted = () => {
        (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
        reject(abortSignal.reason);
      };
      if (abortSignal.aborted) return aborted();
      abortSignal.addEventListener('abort', aborted, { once: true });
      this.docker.modem.followProgress(
        stream,
        (err: Error | null, out: any[]) => {
          abortSignal.removeEventListener('abort', aborted);
          const failed = err ?? out?.find((o) => o?.error);
          if (failed) reject(new Error(failed.message ?? failed.error));
          else resolve();
        },
        (ev: any) => {
          if (ev?.error) return;
          progressed();
          progress({ status: ev.status, id: ev.id, progress: ev.progress });
        },
      );
    });
  }

  /** Host folders bound into component `i`, from its containerData (volumes made before). */
  binds(app: string, spec: AppSpec, i: number): string[] {
    const c = spec.components[i];
    const root = (k: number) => this.volumes.mountpoint(containerName(app, spec.components[k].name, spec.version));
    return parseContainerData(c.containerData, 'containerData', i).map((m) => {
      if (m.kind === 'primary') return `${path.join(root(i), 'appdata')}:${m.path}`;
      if (m.kind === 'primary-of') return `${path.join(root(m.component), 'appdata')}:${m.path}`;
      return `${path.join(root(m.component ?? i), m.sub)}:${m.path}`;
    });
  }

  /** The bind check (bind-check.ts) of `binds`, every refusal reported. */
  private async checkBinds(container: string, binds: string[], when: 'create' | 'start'): Promise<void> {
    try {
      await checkBindSources(this.volumes, container, binds, when);
    } catch (e) {
      if (e instanceof MountRefused) this.onMountRefused(e);
      throw e;
    }
  }

  /**
   * Start a container the node made, after the bind check of the sources Docker holds for it (what Docker
   * will mount, whatever spec made it). Every start of an app's container goes through here or restart().
   */
  async start(name: string): Promise<void> {
    const info = await this.docker.getContainer(name).inspect();
    await this.checkBinds(name, info.HostConfig?.Binds ?? [], 'start');
    await this.docker.getContainer(name).start();
  }

  /** Restart (Docker mounts the sources again): the bind check first, as start(). */
  async restart(name: string): Promise<void> {
    const info = await this.docker.getContainer(name).inspect();
    await this.checkBinds(name, info.HostConfig?.Binds ?? [], 'start');
    await this.docker.getContainer(name).restart({ t: 10 });
  }

  async createContainer(app: string, spec: AppSpec, i: number, hash: string) {
    const c: Component = spec.components[i];
    const name = containerName(app, c.name, spec.version);
    const binds = this.binds(app, spec, i);
    await this.checkBinds(name, binds, 'create');
    const exposed: Record<string, {}> = {};
    const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
    c.containerPorts.forEach((cp, j) => {
      for (const proto of ['tcp', 'udp']) {
        exposed[`${cp}/${proto}`] = {};
        bindings[`${cp}/${proto}`] = [{ HostIp: this.o.publishHost, HostPort: String(c.ports[j]) }];
      }
    });
    return this.docker.createContainer({
      name,
      Image: c.repotag,
      Hostname: c.name,
      Env: [...c.environmentParameters, `CORE_APP_NAME=${app}`, `CORE_NODE_HOST_IP=${this.o.nodeHostIp}`],
      // `--privileged` never reaches Docker, whatever the spec says.
      Cmd: c.commands.length ? c.commands.filter((x) => x !== '--privileged') : undefined,
      Labels: labelsFor(app, c.name, hash),
      ExposedPorts: exposed,
      HostConfig: {
        NanoCpus: Math.round(c.cpu * 1e9),
        Memory: c.ram * MiB,
        MemorySwap: (c.ram + 2000) * MiB,
        Ulimits: [{ Name: 'nofile', Soft: this.o.nofile, Hard: this.o.nofile }],
        // The node's reconciler restarts crashed containers (with its back-off), not Docker.
        RestartPolicy: { Name: 'no' },
        ExtraHosts: ['corenode.service:169.254.43.43'],
        LogConfig: { Type: 'json-file', Config: { 'max-size': '20m', 'max-file': '1' } },
        PortBindings: bindings,
        Binds: binds,
        NetworkMode: networkName(app),
      },
    });
  }

  container(name: string) {
    return this.docker.getContainer(name);
  }

  async removeContainer(name: string): Promise<void> {
    await this.docker
      .getContainer(name)
      .remove({ force: true, v: true })
      .catch((e) => ignore404(e));
  }

  /** Remove an image unless a managed container still uses it; one Docker keeps for others (409) stays. */
  async removeImageIfUnused(repotag: string): Promise<boolean> {
    const users = (await this.listManaged()).filter((c) => c.Image === repotag);
    if (users.length) return false;
    try {
      await this.docker.getImage(repotag).remove();
      return true;
    } catch (e: any) {
      if (e?.statusCode === 409) return false;
      ignore404(e);
      return false;
    }
  }
}

export function ignore404(e: any): void {
  if (e?.statusCode === 404 || e?.statusCode === 304) return;
  throw e;
}

export const describeDockerError = (e: any): string => (e?.json?.message ?? e?.reason ?? e?.message ?? String(e)).toString().trim();
