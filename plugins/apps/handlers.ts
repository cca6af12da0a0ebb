/** Route handlers of the apps plugin (manifests/apps.yaml). */
import { ApiError, websocket, type Caller, type Handler, type HandlerInput, type PlainHandler } from '../../core/plugin-api.ts';
import { execStream, terminal } from './exec.ts';
import { inspectTarget, logAnswer, pollLogs, resolveTarget, sinceOf, statsOf, tailOf } from './inside.ts';
import { describeDockerError, type Engine } from './engine.ts';
import { StepError, type Installer } from './installer.ts';
import { splitAppName } from './names.ts';
import type { PolicyHolder } from './policy.ts';
import { priceOf, type PriceConfig } from './pricing.ts';
import type { Registry } from './registry.ts';
import { checkSpecification, LIMITS, type RuleContext } from './spec-rules.ts';
import { normalise, type AppSpec } from './spec.ts';
import { streamWork } from './stream.ts';
import type { StreamLimits } from './streams.ts';
import type { Monitor } from './monitor.ts';
import { feasibility, locations, type NodePlace } from './placement.ts';
import type { TamperingLog } from './tampering.ts';
import { ignoreNotRunning } from './installer.ts';
import { redactSpec, type Secrets } from './secrets.ts';
import type { TestInstalls } from './test-installs.ts';

export interface HandlerDeps {
  registry: Registry;
  installer: Installer;
  engine: Engine;
  policy: PolicyHolder;
  price: PriceConfig;
  registryAddress: string;
  minConfirmations: number;
  rules: () => RuleContext;
  monitor: Monitor;
  tampering: TamperingLog;
  emit: (name: string, data: Record<string, unknown>) => void;
  place: NodePlace;
  publishHost: string;
  nodeIp: string;
  secrets: Secrets;
  /** Bounds on concurrent log and stats reads (streams.ts). */
  streams: StreamLimits;
  testInstalls: TestInstalls;
}

const NO_APP = () => new ApiError(400, 'BadRequest', 'No Core App specified');
const NOT_FOUND = () => new ApiError(404, 'NotFound', 'Application not found');

/** The body as the client sent it (the signature covers the spec's key order). */
const sent = (input: HandlerInput) => (input.rawBody?.length ? JSON.parse(input.rawBody.toString('utf8')) : input.body);

/** A Docker failure as a typed error naming Docker, never as an internal error. */
export function dockerError(e: any, socketPath: string): unknown {
  if (e instanceof ApiError) return e;
  if (['ENOENT', 'ECONNREFUSED', 'EACCES', 'ECONNRESET'].includes(e?.code)) return new ApiError(503, 'DockerUnavailable', `Docker is not reachable at ${socketPath}: ${e.message}`);
  if (typeof e?.statusCode === 'number') return new ApiError(e.statusCode, 'DockerError', describeDockerError(e));
  return e;
}

function dockerErrors(handlers: Record<string, PlainHandler>, socketPath: string): Record<string, Handler> {
  const wrap = (fn: PlainHandler): PlainHandler => async (input) => {
    try {
      return await fn(input);
    } catch (e: any) {
      throw dockerError(e, socketPath);
    }
  };
  return Object.fromEntries(Object.entries(handlers).map(([k, fn]) => [k, wrap(fn)]));
}

export function makeHandlers(d: HandlerDeps): Record<string, Handler> {
  const sock = d.engine.o.socketPath;
  return {
    ...dockerErrors(handlersOf(d), sock),
    appterminal: websocket(async (input, ws) => {
      try {
        await terminal(d.engine, await resolveTarget(d.installer, input.values.appname), input, ws);
      } catch (e) {
        throw dockerError(e, sock);
      }
    }),
  };
}

function handlersOf(d: HandlerDeps): Record<string, PlainHandler> {
  const { registry, installer, engine, policy } = d;

  const stepFailure = (app: string) => (e: unknown) =>
    e instanceof StepError
      ? { status: 'error', step: e.step, component: e.component, message: `Installation of ${app} failed at step '${e.step}'${e.component ? ` (component ${e.component})` : ''}: ${e.message}; everything it created was removed` }
      : { status: 'error', message: (e as Error).message };

  const installedOrFail = async (app: string) => {
    const rec = await installer.installed(app);
    if (!rec) throw NOT_FOUND();
    return rec;
  };

  /** The components a lifecycle verb acts on, in compose order. */
  const target = async (appname: string) => {
    const { app, component } = splitAppName(appname);
    const rec = await installedOrFail(app);
    const comps = component ? rec.components.filter((c) => c.name === component) : rec.components;
    if (!comps.length) throw NOT_FOUND();
    return { rec, comps };
  };

  const verbs = (verb: string, fn: (name: string) => Promise<unknown>, desired: 'running' | 'stopped', reverse: boolean) => async (input: HandlerInput) => {
    const appname: string | undefined = input.values.appname;
    if (!appname) throw NO_APP();
    const { rec, comps } = await target(appname);
    await installer.withApp(rec.name, async () => {
      await installer.setDesired(rec.name, comps.map((c) => c.name), desired);
      for (const c of reverse ? [...comps].reverse() : comps) await fn(c.container);
    });
    return { message: `Application ${appname} ${verb}` };
  };

  const install = (spec: AppSpec, hash: string, progress: (o: Record<string, unknown>) => void) => installer.install(spec, hash, progress);

  const checkedGlobal = async (name: string) => {
    const g = await registry.spec(name);
    if (!g) throw NOT_FOUND();
    return { spec: checkSpecification(g.appSpecification, d.rules()), hash: g.hash };
  };

  const byFilters = (input: HandlerInput) => ({ hash: input.values.hash, owner: input.values.owner, appname: input.values.appname });

  const isPrivileged = (c: Caller) => c.isAdmin || c.isCoreTeam;

  return {
    verifyRegistration: async (input) => {
      const spec = checkSpecification(sent(input), d.rules());
      if (await registry.spec(spec.name)) throw new ApiError(409, 'AppExists', `Application ${spec.name} is already registered`);
      return redactSpec(spec.raw);
    },
    verifyUpdate: async (input) => {
      const spec = checkSpecification(sent(input), d.rules());
      const g = await registry.spec(spec.name);
      if (!g) throw NOT_FOUND();
      if (g.appSpecification.version > spec.version) throw new ApiError(400, 'ValidationError', `Invalid specification: version: must not be lower than the registered ${g.appSpecification.version}`);
      return redactSpec(spec.raw);
    },
    appregister: async (input) => {
      const m = sent(input);
      checkSpecification(m.appSpecification, d.rules());
      return registry.submit(m, 'register');
    },
    appupdate: async (input) => {
      const m = sent(input);
      checkSpecification(m.appSpecification, d.rules());
      return registry.submit(m, 'update');
    },
    // Specifications are answered with repoauth redacted (secrets.ts); only its owner sees it decrypted.
    temporarymessages: async (input) => (await registry.temporary(input.values.hash)).map((m) => ({ ...m, appSpecification: redactSpec(m.appSpecification) })),
    permanentmessages: async (input) => (await registry.permanent(byFilters(input))).map((m) => ({ ...m, appSpecification: redactSpec(m.appSpecification) })),
    globalappsspecifications: async (input) => (await registry.globals(byFilters(input))).map((g) => ({ ...redactSpec(g.appSpecification), hash: g.hash, height: g.height })),
    appspecifications: async (input) => {
      const g = await registry.spec(input.values.appname);
      if (!g) throw NOT_FOUND();
      // `decrypt` as in the reference: the app's owner only (the core team holds no enterprise key here).
      if (input.values.decrypt) {
        if (input.caller.legacyid !== g.owner) throw ApiError.unauthorized();
        return { ...d.secrets.openSpec(g.appSpecification), hash: g.hash, height: g.height };
      }
      return { ...redactSpec(g.appSpecification), hash: g.hash, height: g.height };
    },
    appowner: async (input) => {
      const name = input.values.appname;
      if (!name) throw NO_APP();
      const g = await registry.spec(String(name));
      if (!g) throw NOT_FOUND();
      return g.owner;
    },
    apporiginalowner: async (input) => {
      const name = input.values.appname;
      if (!name) throw NO_APP();
      const g = await registry.spec(String(name));
      if (!g) throw NOT_FOUND();
      return g.originalOwner;
    },
    hashes: async () => (await registry.permanent()).map((m) => ({ hash: m.hash, txid: m.txid, height: m.height, value: Number(m.valueSat), message: true })),
    messagescount: async (input) => {
      const owner = input.values.appowner;
      return (await registry.permanent(owner ? { owner: String(owner) } : {})).length;
    },
    latestspecificationversion: () => 8,
    registrationinformation: () => ({
      address: d.registryAddress,
      minConfirmations: d.minConfirmations,
      price: d.price,
      specificationVersions: [1, 2, 3, 4, 5, 6, 7, 8],
      latestSpecificationVersion: 8,
      limits: LIMITS,
      maxInstances: 100,
    }),
    calculateprice: (input) => priceOf(checkSpecification(sent(input), d.rules()), d.price).coin,
    calculatefiatandcoreprice: (input) => {
      const p = priceOf(checkSpecification(sent(input), d.rules()), d.price);
      return { usd: p.usd, core: p.coin };
    },

    whitelistedrepositories: () => policy.held?.policy.vettedRepositories ?? [],
    enterpriseappowners: () => policy.held?.policy.enterpriseOwners ?? {},
    networkpolicy: () => {
      const h = policy.held;
      const sources = policy.lastResults;
      if (!h) return { held: false, sources };
      return { held: true, issuedAt: h.policy.issuedAt, signer: h.signed.legacyid, source: h.source, receivedAt: h.receivedAt, policy: h.policy, sources };
    },

    installapplocally: async (input) => {
      const name: string = input.values.appname;
      if (name.includes('_')) throw new ApiError(400, 'BadRequest', 'Install the whole app, not a component');
      const { spec, hash } = await checkedGlobal(name);
      return streamWork(installer, `install ${spec.name}`, spec.name, async (progress) => {
        await install(spec, hash, progress);
        d.emit('apps.installed', { app: spec.name, hash });
        return `App ${spec.name} installed and started`;
      }, stepFailure(spec.name));
    },
    testappinstall: async (input) => {
      const name: string = input.values.appname;
      const privileged = isPrivileged(input.caller);
      const temps = (await registry.temporary()).filter((t) => t.appSpecification.name === name && (privileged || t.appSpecification.owner === input.caller.legacyid));
      temps.sort((a, b) => b.receivedAt - a.receivedAt);
      let spec: AppSpec;
      let hash: string;
      if (temps.length) {
        spec = checkSpecification(temps[0].appSpecification, d.rules());
        hash = temps[0].hash;
      } else if (privileged) {
        ({ spec, hash } = await checkedGlobal(name));
      } else throw ApiError.unauthorized();
      return d.testInstalls.start(input.caller.legacyid ?? '', spec, hash, stepFailure(spec.name));
    },

    appstart: verbs('started', (n) => engine.start(n).catch(ignoreNotRunning), 'running', false),
    appstop: verbs('stopped', (n) => engine.container(n).stop({ t: 10 }).catch(ignoreNotRunning), 'stopped', true),
    apprestart: verbs('restarted', (n) => engine.restart(n), 'running', false),
    appkill: verbs('killed', (n) => engine.container(n).kill().catch(ignoreNotRunning), 'stopped', true),
    appremove: async (input) => {
      const appname: string = input.values.appname;
      if (appname.includes('_')) throw new ApiError(400, 'BadRequest', 'Component cannot be removed manually; remove the whole app');
      const rec = await installer.installed(appname);
      if (!rec && !(await engine.listApp(appname)).length) throw NOT_FOUND();
      const containers = rec ? rec.components.map((c) => c.container) : [];
      return streamWork(installer, `remove ${appname}`, appname, async (progress) => {
        await installer.remove(appname, !!input.values.force, progress);
        for (const c of containers) d.monitor.forget(c);
        d.emit('apps.removed', { app: appname });
        return `App ${appname} removed`;
      });
    },
    redeploy: async (input) => {
      const appname: string = input.values.appname;
      if (appname.includes('_')) throw new ApiError(400, 'BadRequest', 'Component cannot be redeployed manually');
      const rec = await installedOrFail(appname);
      const spec = checkSpecification(rec.appSpecification, d.rules());
      const force = !!input.values.force;
      return streamWork(installer, `redeploy ${appname}`, appname, async (progress) => {
        if (force) {
          await installer.remove(appname, true, progress);
          await install(spec, rec.hash, progress);
          return `App ${appname} reinstalled`;
        }
        for (const [i, c] of rec.components.entries()) await installer.recreate(rec.name, spec, i, rec.hash, c.container, false, progress);
        await installer.setDesired(appname, rec.components.map((c) => c.name), 'running');
        return `App ${appname} redeployed`;
      });
    },
    redeploycomponent: async (input) => {
      const appname: string = input.values.appname;
      const component: string | undefined = input.values.component;
      if (!component) throw new ApiError(400, 'BadRequest', 'No component specified');
      const rec = await installedOrFail(splitAppName(appname).app);
      const i = rec.components.findIndex((c) => c.name === component);
      if (i < 0) throw NOT_FOUND();
      const spec = checkSpecification(rec.appSpecification, d.rules());
      return streamWork(installer, `redeploy ${component}_${rec.name}`, rec.name, async (progress) => {
        await installer.recreate(rec.name, spec, i, rec.hash, rec.components[i].container, !!input.values.force, progress);
        await installer.setDesired(rec.name, [component], 'running');
        return `Component ${component} of ${rec.name} redeployed`;
      });
    },

    // --- looking inside (one container, by its exact name from the installed record) ---
    // Log and stats reads run under the caller's slot (streams.ts); applog streams the log (logstream.ts).
    applog: d.streams.limit(async (input) => {
      const tail = tailOf(input.values.lines);
      return logAnswer(engine, await resolveTarget(installer, input.values.appname), tail);
    }),
    applogpolling: d.streams.limit(async (input) => {
      const raw = input.values.lineCount ?? input.values.lines ?? 100;
      const lineCount = Number(raw);
      if (!Number.isInteger(lineCount) || lineCount < 1 || lineCount > 100_000) throw new ApiError(400, 'BadRequest', `lineCount: must be a whole number 1-100000, got ${JSON.stringify(String(raw))}`);
      const since = sinceOf(input.values.since);
      return pollLogs(engine, await resolveTarget(installer, input.values.appname), lineCount, since);
    }),
    appinspect: async (input) => inspectTarget(engine, await resolveTarget(installer, input.values.appname)),
    appstats: d.streams.limit(async (input) => statsOf(engine, await resolveTarget(installer, input.values.appname))),
    apptop: async (input) => {
      const t = await resolveTarget(installer, input.values.appname);
      await inspectTarget(engine, t);
      return engine.container(t.container).top();
    },
    appchanges: async (input) => {
      const t = await resolveTarget(installer, input.values.appname);
      await inspectTarget(engine, t);
      return (await engine.container(t.container).changes()) ?? [];
    },
    appmonitor: async (input) => {
      const t = await resolveTarget(installer, input.values.appname);
      const raw = input.values.range;
      const range = raw === undefined || raw === '' ? 3600_000 : Number(raw);
      if (!Number.isInteger(range) || range < 1 || range > 7 * 24 * 3600_000) throw new ApiError(400, 'BadRequest', `range: must be milliseconds 1-${7 * 24 * 3600_000}, got ${JSON.stringify(String(raw))}`);
      return d.monitor.history(t.container, range);
    },
    tamperingevents: async (input) => {
      const rawLimit = input.values.limit;
      const limit = rawLimit === undefined ? 500 : Number(rawLimit);
      if (typeof rawLimit !== 'undefined' && typeof rawLimit !== 'string' && typeof rawLimit !== 'number') throw new ApiError(400, 'BadRequest', 'limit: must be a whole number 1-1000');
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new ApiError(400, 'BadRequest', `limit: must be a whole number 1-1000, got ${JSON.stringify(String(rawLimit))}`);
      const app = input.values.appname;
      if (app !== undefined && typeof app !== 'string') throw new ApiError(400, 'BadRequest', 'appname: must be a string');
      return d.tampering.list(app, limit);
    },
    placementfeasibility: async (input) => {
      let spec: AppSpec;
      try {
        spec = checkSpecification(sent(input), d.rules());
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        return { feasible: false, checks: [{ check: 'specification', ok: false, message: e.message }] };
      }
      return feasibility(spec, { place: d.place, policy, installed: await installer.store.find({}), publishHost: d.publishHost, nodeIp: d.nodeIp });
    },
    placementlocations: async () => locations(d.place, d.nodeIp, await installer.store.find({})),
    appexec: async (input) => {
      return execStream(engine, await resolveTarget(installer, input.values.appname), input.values);
    },

    listrunningapps: async () => (await engine.listManaged(false)).map(view),
    listallapps: async () => (await engine.listManaged(true)).map(view),
    listappsimages: async () => {
      const tags = new Set<string>();
      for (const rec of await installer.store.find({})) for (const c of normalise(rec.appSpecification).components) tags.add(c.repotag);
      const images = await engine.docker.listImages();
      return images.filter((i) => (i.RepoTags ?? []).some((t) => tags.has(t))).map((i) => ({ Id: i.Id, RepoTags: i.RepoTags, Size: i.Size, Created: i.Created }));
    },
    installedapps: async (input) => {
      const q = input.values.appname ? { name: input.values.appname } : {};
      return (await installer.store.find(q)).map((r) => ({ ...redactSpec(r.appSpecification), hash: r.hash, installedAt: r.installedAt, components: r.components.map(({ name, container, desired, imageId, stoppedReason, stoppedAt }) => ({ name, container, desired, ...(imageId ? { imageId } : {}), ...(stoppedReason ? { stoppedReason, stoppedAt } : {}) })) }));
    },
    availableapps: async () => (await registry.globals()).map((g) => redactSpec(g.appSpecification)),
    coreusage: async () => {
      let cpu = 0;
      for (const rec of await installer.store.find({})) for (const c of normalise(rec.appSpecification).components) cpu += c.cpu;
      return Number(cpu.toFixed(1));
    },
    appsresources: async () => {
      const t = { appsCpusLocked: 0, appsRamLocked: 0, appsHddLocked: 0 };
      for (const rec of await installer.store.find({}))
        for (const c of normalise(rec.appSpecification).components) {
          t.appsCpusLocked += c.cpu;
          t.appsRamLocked += c.ram;
          t.appsHddLocked += c.hdd;
        }
      t.appsCpusLocked = Number(t.appsCpusLocked.toFixed(1));
      return t;
    },
  };
}

/** The listing fields of a container (Docker's names). */
function view(c: any) {
  return { Id: c.Id, Names: c.Names, Image: c.Image, State: c.State, Status: c.Status, Created: c.Created, Ports: c.Ports, Labels: c.Labels };
}
