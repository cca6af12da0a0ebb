/**
 * Global app commands (`appstop/<app>/true` and the other lifecycle verbs). The caller signs the command
 * with its wallet (command-signatures.ts: verb, app, target, force, timestamp) and sends the signature with
 * the route's query; the node it called checks its session (the route's level) and the signature, runs its
 * own part, then broadcasts an `appcommand` carrying the caller's signature, itself signed with the node's
 * link key. Every node that runs the app checks, before it acts: the message's age, the sending node's
 * origin proof (membership nodelist), then the caller's signature, that on its own records the caller may
 * run the verb (the app's owner, its registered else installed one, or a core-team id), and that the
 * command is not a replay. A listed peer, however trusted as a node, cannot act for an owner who did not
 * sign that very command; the caller's session header never leaves the node it called.
 */
import { ApiError, type Log, type NodeInfo } from '../../core/plugin-api.ts';
import type { AppsService, LifecycleVerb } from '../apps/api.ts';
import { globalCommandText, type GlobalCommand, type GlobalOutcome } from './api.ts';
import type { CommandSignatures } from './command-signatures.ts';
import type { Membership } from './membership.ts';
import type { PeerNode } from './protocol/node.ts';

export const GLOBAL_VERBS: readonly LifecycleVerb[] = ['appstart', 'appstop', 'apprestart', 'appkill', 'appremove', 'redeploy'];

export class GlobalCommands {
  private readonly offs: (() => void)[] = [];
  readonly outcomes: GlobalOutcome[] = [];

  constructor(
    private readonly net: PeerNode,
    private readonly apps: () => AppsService | undefined,
    private readonly node: NodeInfo,
    private readonly log: Log,
    private readonly maxAgeMs: number,
    private readonly membership: Membership,
    private readonly signatures: CommandSignatures,
  ) {
    this.offs.push(net.on('appcommand', (m) => void this.receive(m.payload as GlobalCommand, m.origin, m.sentAt)));
    this.offs.push(
      net.on('appcommandresult', (m) => {
        const o = m.payload as GlobalOutcome;
        if (o && typeof o.id === 'string') this.keep({ ...o, node: m.origin });
      }),
    );
  }

  stop() {
    for (const off of this.offs) off();
  }

  /**
   * A command whose caller passed the route's session check here (its owner or core-team level): refused
   * with a 400 naming the field unless its signature holds; then `here` (this node's part) runs, and only
   * when that did not throw does the command go out. Answers its id (outcomes arrive as `appcommandresult`).
   */
  async send<T>(cmd: Omit<GlobalCommand, 'id' | 'issuedAt' | 'sender'>, here: () => Promise<T>): Promise<{ id: string; here: T }> {
    // The route's level already placed the caller among the app's owner and the core team on this node.
    const taken = this.signatures.take(cmd, () => true);
    if ('refused' in taken) {
      const text = globalCommandText({ ...cmd, timestamp: Number.isInteger(cmd.timestamp) ? cmd.timestamp : 0 }).replace(/timestamp: 0$/, 'timestamp: <ms>');
      throw new ApiError(400, 'BadRequest', `Global ${cmd.verb} of ${cmd.app} refused: ${taken.refused}. The query carries timestamp=<ms since the epoch> and signature=<${cmd.caller}'s wallet signature of ${JSON.stringify(text)}>`);
    }
    let result: T;
    try {
      result = await here();
    } catch (e) {
      this.signatures.release(taken.key);
      throw e;
    }
    // `sender`: which listed node sends it (its node key's statement about its link key), for every receiver.
    const sender = this.membership.originProof(this.net.key, this.net.cfg.ip);
    const full: GlobalCommand = { ...cmd, id: `${Date.now()}-${Math.random().toString(36).slice(2, 10)}`, issuedAt: Date.now(), ...(sender ? { sender } : {}) };
    this.net.broadcast('appcommand', full);
    return { id: full.id, here: result };
  }

  private keep(o: GlobalOutcome) {
    this.outcomes.push(o);
    if (this.outcomes.length > 500) this.outcomes.shift();
  }

  private async receive(c: GlobalCommand, origin: string, sentAt: number) {
    const apps = this.apps();
    if (!apps || !c || typeof c.app !== 'string' || typeof c.caller !== 'string' || !GLOBAL_VERBS.includes(c.verb)) return;
    // `component_app` targets one component of the app.
    const base = c.app.includes('_') ? c.app.slice(c.app.indexOf('_') + 1) : c.app;
    const installed = await apps.installed(base).catch(() => null);
    // A remove of the whole app concerns every node: none may place it again (apps `withdraw`).
    if (!installed) return c.verb === 'appremove' && c.app === base ? this.withdrawHere(c, base, origin, sentAt) : undefined;
    const answer = (ok: boolean, message: string) => {
      this.log.info({ app: c.app, verb: c.verb, caller: c.caller, origin, ok, message }, 'peers: global command');
      const o: GlobalOutcome = { id: String(c.id), app: c.app, verb: c.verb, node: this.net.key, ok, message };
      this.keep(o);
      this.net.broadcast('appcommandresult', o);
    };
    if (Date.now() - sentAt > this.maxAgeMs) return answer(false, 'command too old');
    const notListed = await this.membership.checkOrigin(origin, c.sender);
    if (notListed) return answer(false, `command refused: ${notListed}`);
    const registered = await apps.registered(base).catch(() => null);
    const owner = registered?.specification.owner ?? installed.owner;
    const taken = this.signatures.take(c, (id) => id === owner || this.node.coreTeam.includes(id));
    if ('refused' in taken) return answer(false, `command refused: ${taken.refused}`);
    try {
      const r = await apps.runVerb(c.verb, c.app, { force: !!c.force });
      if (c.verb === 'appremove' && c.app === base) await apps.withdraw(base);
      answer(true, r);
    } catch (e) {
      answer(false, (e as Error).message);
    }
  }

  /** A global remove heard by a node that does not run the app: checked as a run would be, then withdrawn here, silently. */
  private async withdrawHere(c: GlobalCommand, base: string, origin: string, sentAt: number) {
    const apps = this.apps();
    if (!apps || Date.now() - sentAt > this.maxAgeMs) return;
    if (await this.membership.checkOrigin(origin, c.sender)) return;
    const registered = await apps.registered(base).catch(() => null);
    if (!registered) return;
    const taken = this.signatures.take(c, (id) => id === registered.specification.owner || this.node.coreTeam.includes(id));
    if ('refused' in taken) return;
    await apps.withdraw(base).catch((e) => this.log.warn({ app: base, err: (e as Error).message }, 'peers: withdrawing an app failed'));
    this.log.info({ app: base, caller: c.caller, origin }, 'peers: global remove heard: the app is withdrawn from placement here');
  }
}
