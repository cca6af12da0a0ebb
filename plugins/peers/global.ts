/**
 * Global app commands (`appstop/<app>/true` and the other lifecycle verbs): the node the owner called
 * checked the caller's session itself (the route's level). It then broadcasts an `appcommand` signed with
 * its node key naming the verb, the app and the caller's id; the caller's session header never leaves it.
 * A node that runs the app carries the command out when, on its own records, that caller may run the verb:
 * the app's owner (its registered or installed owner) or a core-team id; a command older than
 * `maxAgeMs` is refused. The trust this needs (README: global commands) is that the sending node checked the
 * session: every command names its origin node, and each receiving node logs and reports it.
 */
import type { Log, NodeInfo } from '../../core/plugin-api.ts';
import type { AppsService, LifecycleVerb } from '../apps/api.ts';
import type { GlobalCommand, GlobalOutcome } from './api.ts';
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

  /** Send a command the caller was authorised for here; answers its id (outcomes arrive as `appcommandresult`). */
  send(cmd: Omit<GlobalCommand, 'id' | 'issuedAt'>): string {
    // `sender`: which listed node sends it (its node key's statement about its link key), for every receiver.
    const sender = this.membership.originProof(this.net.key, this.net.cfg.ip);
    const full: GlobalCommand = { ...cmd, id: `${Date.now()}-${Math.random().toString(36).slice(2, 10)}`, issuedAt: Date.now(), ...(sender ? { sender } : {}) };
    this.net.broadcast('appcommand', full);
    return full.id;
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
    if (!installed) return; // not running here: nothing to do
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
    const allowed = c.caller === owner || this.node.coreTeam.includes(c.caller);
    if (!allowed) return answer(false, `${c.caller} may not ${c.verb} ${c.app} on this node`);
    try {
      const r = await apps.runVerb(c.verb, c.app, { force: !!c.force });
      answer(true, r);
    } catch (e) {
      answer(false, (e as Error).message);
    }
  }
}
