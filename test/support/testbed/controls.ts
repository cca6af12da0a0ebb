/**
 * The testbed's faults, as nftables rules in the testbed's own namespaces (table `testbed`, rewritten whole
 * at each change in one `nft -f` transaction, so a rule is never half there):
 * - `cut(x)`: everything on x's `eth0` dropped, in and out and forwarded (`how: 'drop'`: the peers see a
 *   silent outage, their connections time out), or its link down (`how: 'down'`: the host's own sends fail
 *   at once; heal brings the link and its default routes back).
 * - `cutBetween(a, b)`: in a's namespace, what goes to or comes from the addresses b is reached at from a,
 *   and the same in b's. A host behind a router shares the router's public address with its LAN
 *   neighbours: towards that address only b's own ports (`host.ports`, its API port once a node runs there)
 *   are dropped, so the neighbours stay reachable; b's own rules cut the connections b makes.
 * - `loss(f)`: in the internet's bridge, each frame that crosses it (to or from the hosts named, default all)
 *   is dropped with probability f (`numgen random mod 1000 < 1000f`): one draw per frame however many lossy
 *   hosts it joins. `tc netem` is not available on this machine.
 */
import type { NetHost, NetRouter, TestNet } from './net.ts';
import { INTERNET_V4, INTERNET_V6 } from './net.ts';
import { execIn, ip } from './procs.ts';

type Place = NetHost | NetRouter;

interface Seen {
  addr: string;
  v6: boolean;
  /** The address of a router with several hosts behind it. */
  shared: boolean;
}

/** The addresses `y` is reached at from `x`. */
function seen(x: NetHost, y: NetHost): Seen[] {
  const out: Seen[] = [];
  const add = (addr: string | undefined, v6: boolean, shared: boolean) => addr && out.push({ addr, v6, shared });
  if (x.router && x.router === y.router) {
    add(y.v4, false, false);
    add(y.v6, true, false);
  }
  if (y.router) {
    const shared = y.router.hosts.length > 1;
    add(y.router.v4, false, shared);
    add(y.router.v6, true, shared);
  } else {
    add(y.v4, false, false);
    add(y.v6, true, false);
  }
  return out;
}

export class Controls {
  private readonly cuts = new Map<string, 'drop' | 'down'>();
  /** Pairs cut, as `a\nb` with a < b. */
  private readonly pairs = new Set<string>();
  private lossOf: { permille: number; names?: string[] } = { permille: 0 };

  constructor(private readonly net: TestNet) {}

  cut(name: string, how: 'drop' | 'down') {
    const p = this.net.place(name);
    if (this.cuts.has(name)) this.heal(name);
    this.cuts.set(name, how);
    if (how === 'down') ip('-n', p.ns, 'link', 'set', 'eth0', 'down');
    else this.apply(p);
  }

  heal(name: string) {
    const p = this.net.place(name);
    const how = this.cuts.get(name);
    if (!how) return;
    this.cuts.delete(name);
    if (how === 'drop') return this.apply(p);
    ip('-n', p.ns, 'link', 'set', 'eth0', 'up');
    // The link's routes went with it; its addresses stayed (keep_addr_on_down).
    const lan = p.kind === 'host' && p.router;
    if (p.v4) ip('-n', p.ns, 'route', 'replace', 'default', 'via', lan ? p.router!.lanV4 : INTERNET_V4);
    if (p.v6) ip('-n', p.ns, '-6', 'route', 'replace', 'default', 'via', lan ? p.router!.lanV6! : INTERNET_V6);
  }

  between(a: string, b: string, cut: boolean) {
    const [x, y] = [this.net.host(a), this.net.host(b)];
    if (x === y) throw new Error(`cutBetween: ${a} twice`);
    const key = [a, b].sort().join('\n');
    if (cut) {
      // Checked before anything changes: a shared address needs the host's ports.
      this.pairRules(x, y);
      this.pairRules(y, x);
      this.pairs.add(key);
    } else this.pairs.delete(key);
    this.apply(x);
    this.apply(y);
  }

  loss(fraction: number, names?: string[]) {
    if (!(fraction >= 0 && fraction <= 1)) throw new Error(`loss: a fraction from 0 to 1, not ${fraction}`);
    for (const n of names ?? []) this.net.place(n);
    this.lossOf = { permille: Math.round(fraction * 1000), names };
    const port = (p: Place) => (p.kind === 'host' && p.router ? p.router : p).ns.slice(this.net.prefix.length + 1);
    const ports = [...new Set((names ?? []).map((n) => port(this.net.place(n))))];
    const { permille } = this.lossOf;
    let rules = '';
    if (permille > 0 && !names) rules = `    numgen random mod 1000 < ${permille} drop\n`;
    else if (permille > 0 && ports.length) {
      const set = `{ ${ports.map((p) => `"${p}"`).join(', ')} }`;
      // One draw per frame: marked when either end is lossy, then dropped by chance once.
      rules = `    iifname ${set} meta mark set 0x74620001\n    oifname ${set} meta mark set 0x74620001\n    meta mark 0x74620001 numgen random mod 1000 < ${permille} drop\n`;
    }
    replaceTable(this.net.internetNs, 'bridge', rules ? `  chain forward {\n    type filter hook forward priority 0; policy accept;\n${rules}  }\n` : '');
  }

  /** The rules in x's namespace that cut it from y: [input, output]. */
  private pairRules(x: NetHost, y: NetHost): [string[], string[]] {
    const input: string[] = [];
    const output: string[] = [];
    for (const s of seen(x, y)) {
      const fam = s.v6 ? 'ip6' : 'ip';
      if (!s.shared) {
        input.push(`${fam} saddr ${s.addr} drop`);
        output.push(`${fam} daddr ${s.addr} drop`);
        continue;
      }
      if (!y.ports.length) throw new Error(`cutBetween ${x.name} ${y.name}: ${y.name} shares ${s.addr} with its LAN neighbours; give it ports (host.ports) to cut it alone`);
      const ports = `{ ${y.ports.join(', ')} }`;
      input.push(`${fam} saddr ${s.addr} meta l4proto { tcp, udp } th sport ${ports} drop`);
      output.push(`${fam} daddr ${s.addr} meta l4proto { tcp, udp } th dport ${ports} drop`);
    }
    return [input, output];
  }

  /** Rewrite a place's `testbed` table from the state. */
  private apply(p: Place) {
    const input: string[] = [];
    const output: string[] = [];
    const forward: string[] = [];
    if (this.cuts.get(p.name) === 'drop') {
      input.push('iifname "eth0" drop');
      output.push('oifname "eth0" drop');
      forward.push('iifname "eth0" drop', 'oifname "eth0" drop');
    }
    if (p.kind === 'host')
      for (const key of this.pairs) {
        const [a, b] = key.split('\n');
        const other = a === p.name ? b : b === p.name ? a : null;
        if (!other) continue;
        const [i, o] = this.pairRules(p, this.net.host(other));
        input.push(...i);
        output.push(...o);
      }
    const chain = (name: string, rules: string[]) =>
      rules.length ? `  chain ${name} {\n    type filter hook ${name} priority -10; policy accept;\n${rules.map((r) => `    ${r}\n`).join('')}  }\n` : '';
    replaceTable(p.ns, 'inet', chain('input', input) + chain('output', output) + chain('forward', forward));
  }
}

/** Replace table `<family> testbed` in a namespace by `body` (none when empty), in one transaction. */
function replaceTable(ns: string, family: 'inet' | 'bridge', body: string) {
  const script = `table ${family} testbed\ndelete table ${family} testbed\n${body ? `table ${family} testbed {\n${body}}\n` : ''}`;
  execIn(ns, ['nft', '-f', '-'], { input: script });
}
