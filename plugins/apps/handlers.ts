/** Route handlers of the apps plugin (manifests/apps.yaml). */
import { ApiError, type Caller, type Handler, type HandlerInput, type PlainHandler } from '../../core/plugin-api.ts';
import { describeDockerError, type Engine } from './engine.ts';
import { StepError, type Installer } from './installer.ts';
import { splitAppName } from './names.ts';
import type { PolicyHolder } from './policy.ts';
import { priceOf, type PriceConfig } from './pricing.ts';
import type { Registry } from './registry.ts';
import { checkSpecification, LIMITS, type RuleContext } from './spec-rules.ts';
import { normalise, type AppSpec } from './spec.ts';
import { streamWork } from './stream.ts';
import { ignoreNotRunning } from './installer.ts';

export interface HandlerDeps {
  registry: Registry;
  installer: Installer;
  engine: Engine;
  policy: PolicyHolder;
  price: PriceConfig;
  registryAddress: string;
  minConfirmations: number;
  rules: () => RuleContext;
}

const NO_APP = () => new ApiError(400, 'BadRequest', 'No Core App specified');
const NOT_FOUND = () => new ApiError(404, 'NotFound', 'Application not found');

/** The body as the client sent it (the signature covers the spec's key order). */
const sent = (input: HandlerInput) => (input.rawBody?.length ? JSON.parse(input.rawBody.toString('utf8')) : input.body);

/** Docker failures reach the caller as a typed error naming Docker, never as an internal error. */
function dockerErrors(handlers: Record<string, PlainHandler>, socketPath: string): Record<string, Handler> {
  const wrap = (fn: PlainHandler): PlainHandler => async (input) => {
    try {
      return await fn(input);
    } catch (e: any) {
      if (e instanceof ApiError) throw e;
      if (['ENOENT', 'ECONNREFUSED', 'EACCES', 'ECONNRESET'].includes(e?.code)) throw new ApiError(503, 'DockerUnavailable', `Docker is not reachable at ${socketPath}: ${e.message}`);
      if (typeof e?.statusCode === 'number') throw new ApiError(e.statusCode, 'DockerError', describeDockerError(e));
      throw e;
    }
  };
  return Object.fromEntries(Object.entries(handlers).map(([k, fn]) => [k, wrap(fn)]));
}

export function makeHandlers(d: HandlerDeps): Record<string, Handler> {
  return dockerErrors(handlersOf(d), d.engine.o.socketPath);
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
    const appname: string | undefined = input.params.appname;
    if (!appname) throw NO_APP();
    const { rec, comps } = await target(appname);
    await installer.setDesired(rec.name, comps.map((c) => c.name), desired);
    for (const c of reverse ? [...comps].reverse() : comps) await fn(c.container);
    return { message: `Application ${appname} ${verb}` };
  };

  const install = (spec: AppSpec, hash: string, progress: (o: Record<string, unknown>) => void) => installer.install(spec, hash, progress);

  const checkedGlobal = async (name: string) => {
    const g = await registry.spec(name);
    if (!g) throw NOT_FOUND();
    return { spec: checkSpecification(g.appSpecification, d.rules()), hash: g.hash };
  };

  const byFilters = (input: HandlerInput) => ({
    hash: input.params.hash ?? input.query.hash,
    owner: input.params.owner ?? input.query.owner,
    appname: input.params.appname ?? input.query.appname,
  });

  const isPrivileged = (c: Caller) => c.isAdmin || c.isCoreTeam;

  return {
    verifyRegistration: async (input) => {
      const spec = checkSpecification(sent(input), d.rules());
      if (await registry.spec(spec.name)) throw new ApiError(409, 'AppExists', `Application ${spec.name} is already registered`);
      return spec.raw;
    },
    verifyUpdate: async (input) => {
      const spec = checkSpecification(sent(input), d.rules());
      const g = await registry.spec(spec.name);
      if (!g) throw NOT_FOUND();
      if (g.appSpecification.version > spec.version) throw new ApiError(400, 'ValidationError', `Invalid specification: version: must not be lower than the registered ${g.appSpecification.version}`);
      return spec.raw;
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
    temporarymessages: (input) => registry.temporary(input.params.hash),
    permanentmessages: (input) => registry.permanent(byFilters(input)),
    globalappsspecifications: async (input) => (await registry.globals(byFilters(input))).map((g) => ({ ...g.appSpecification, hash: g.hash, height: g.height })),
    appspecifications: async (input) => {
      const g = await registry.spec(input.params.appname);
      if (!g) throw NOT_FOUND();
      return { ...g.appSpecification, hash: g.hash, height: g.height };
    },
    appowner: async (input) => {
      const name = input.params.appname ?? input.query.appname;
      if (!name) throw NO_APP();
      const g = await registry.spec(String(name));
      if (!g) throw NOT_FOUND();
      return g.owner;
    },
    apporiginalowner: async (input) => {
      const name = input.params.appname ?? input.query.appname;
      if (!name) throw NO_APP();
      const g = await registry.spec(String(name));
      if (!g) throw NOT_FOUND();
      return g.originalOwner;
    },
    hashes: async () => (await registry.permanent()).map((m) => ({ hash: m.hash, txid: m.txid, height: m.height, value: Number(m.valueSat), message: true })),
    messagescount: async (input) => {
      const owner = input.params.appowner ?? input.query.appowner;
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
      const name: string = input.params.appname;
      if (name.includes('_')) throw new ApiError(400, 'BadRequest', 'Install the whole app, not a component');
      const { spec, hash } = await checkedGlobal(name);
      return streamWork(installer, `install ${spec.name}`, spec.name, async (progress) => {
        await install(spec, hash, progress);
        return `App ${spec.name} installed and started`;
      }, stepFailure(spec.name));
    },
    testappinstall: async (input) => {
      const name: string = input.params.appname;
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
      return streamWork(installer, `test install ${spec.name}`, spec.name, async (progress) => {
        await install(spec, hash, progress);
        progress({ step: 'test', status: `App ${spec.name} installed and started; removing the test installation` });
        await installer.remove(spec.name, true, progress);
        return `Test installation of ${spec.name} succeeded`;
      }, stepFailure(spec.name));
    },

    appstart: verbs('started', (n) => engine.container(n).start().catch(ignoreNotRunning), 'running', false),
    appstop: verbs('stopped', (n) => engine.container(n).stop({ t: 10 }).catch(ignoreNotRunning), 'stopped', true),
    apprestart: verbs('restarted', (n) => engine.container(n).restart({ t: 10 }), 'running', false),
    appkill: verbs('killed', (n) => engine.container(n).kill().catch(ignoreNotRunning), 'stopped', true),
    appremove: async (input) => {
      const appname: string = input.params.appname;
      if (appname.includes('_')) throw new ApiError(400, 'BadRequest', 'Component cannot be removed manually; remove the whole app');
      const rec = await installer.installed(appname);
      if (!rec && !(await engine.listApp(appname)).length) throw NOT_FOUND();
      return streamWork(installer, `remove ${appname}`, appname, async (progress) => {
        await installer.remove(appname, !!input.params.force, progress);
        return `App ${appname} removed`;
      });
    },
    redeploy: async (input) => {
      const appname: string = input.params.appname;
      if (appname.includes('_')) throw new ApiError(400, 'BadRequest', 'Component cannot be redeployed manually');
      const rec = await installedOrFail(appname);
      const spec = checkSpecification(rec.appSpecification, d.rules());
      const force = !!input.params.force;
      return streamWork(installer, `redeploy ${appname}`, appname, async (progress) => {
        if (force) {
          await installer.remove(appname, true, progress);
          await install(spec, rec.hash, progress);
          return `App ${appname} reinstalled`;
        }
        for (const [i, c] of rec.components.entries()) await recreate(rec.name, spec, i, rec.hash, c.container, false, progress);
        await installer.setDesired(appname, rec.components.map((c) => c.name), 'running');
        return `App ${appname} redeployed`;
      });
    },
    redeploycomponent: async (input) => {
      const appname: string = input.params.appname;
      const component: string | undefined = input.params.component;
      if (!component) throw new ApiError(400, 'BadRequest', 'No component specified');
      const rec = await installedOrFail(splitAppName(appname).app);
      const i = rec.components.findIndex((c) => c.name === component);
      if (i < 0) throw NOT_FOUND();
      const spec = checkSpecification(rec.appSpecification, d.rules());
      return streamWork(installer, `redeploy ${component}_${rec.name}`, rec.name, async (progress) => {
        await recreate(rec.name, spec, i, rec.hash, rec.components[i].container, !!input.params.force, progress);
        await installer.setDesired(rec.name, [component], 'running');
        return `Component ${component} of ${rec.name} redeployed`;
      });
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
      const q = input.params.appname ? { name: input.params.appname } : {};
      return (await installer.store.find(q)).map((r) => ({ ...r.appSpecification, hash: r.hash, installedAt: r.installedAt, components: r.components.map(({ name, container, desired }) => ({ name, container, desired })) }));
    },
    availableapps: async () => (await registry.globals()).map((g) => g.appSpecification),
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

  /** Recreate one component's container from the spec (its volume kept, or emptied when `wipe`). */
  async function recreate(app: string, spec: AppSpec, i: number, hash: string, container: string, wipe: boolean, progress: (o: Record<string, unknown>) => void) {
    const c = spec.components[i];
    await engine.container(container).stop({ t: 10 }).catch(() => {});
    await engine.removeContainer(container);
    progress({ step: 'container', component: c.name, status: `Container ${container} removed` });
    await engine.pull(c.repotag, c.repoauth, (o) => progress({ step: 'pull', component: c.name, ...o }));
    await engine.volumes.create(container, c.hdd);
    if (wipe) {
      await engine.volumes.wipe(container);
      progress({ step: 'volume', component: c.name, status: `Data of ${container} removed` });
    }
    await engine.ensureNetwork(app);
    await engine.createContainer(app, spec, i, hash);
    await engine.container(container).start();
    progress({ step: 'start', component: c.name, status: `Container ${container} started` });
  }
}

/** The listing fields of a container (Docker's names). */
function view(c: any) {
  return { Id: c.Id, Names: c.Names, Image: c.Image, State: c.State, Status: c.Status, Created: c.Created, Ports: c.Ports, Labels: c.Labels };
}
