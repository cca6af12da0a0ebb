/**
 * The node's firewall, by `ufw` or `nft` argument vectors (never a shell string: a port is checked to be an
 * integer first, then passed as one argument): `allowport/:port`, and the ports other plugins hold open
 * (app-ports.ts). nft rules go into the operator's existing filter chains (an accept in a table of our own
 * would not override a drop in theirs), tagged with a comment so a second call adds nothing and a removal
 * deletes only its own rules (by handle).
 */
import { ApiError, type HandlerInput } from '../../core/plugin-api.ts';
import { mustRun, runArgv } from './procs.ts';
import type { NodeConfig } from './settings.ts';

export interface Firewall {
  readonly tool: NodeConfig['firewall']['tool'];
  /** Allow each port in and out; with nft, a rule tagged `tag` in each chain unless one is there. Answers the nft rules added. */
  allow(rules: { port: number; tag: string }[]): Promise<number>;
  /** Remove what `allow` made for the port: with nft the rules tagged `tag` (none there is no error). */
  remove(port: number, tag: string): Promise<void>;
}

export function createFirewall(fw: NodeConfig['firewall'], logFile: string): Firewall {
  const argv = (args: string[]) => [...fw.command, ...args];
  const run = (args: string[]) => mustRun(argv(args), { timeoutMs: 30_000, logFile });
  // Listings change nothing and the refresh round makes two every round: kept out of the control log.
  const read = (args: string[]) => mustRun(argv(args), { timeoutMs: 30_000 });
  const chains = [fw.nft.inputChain, fw.nft.outputChain];
  const comment = (tag: string) => `comment "${tag}"`;

  return {
    tool: fw.tool,
    async allow(rules) {
      if (fw.tool === 'none') return 0;
      let added = 0;
      if (fw.tool === 'ufw') {
        // ufw skips a rule it already has.
        for (const { port } of rules) {
          await run(['allow', String(port)]);
          await run(['allow', 'out', String(port)]);
        }
        return 0;
      }
      // One listing per chain for all the rules: the refresh round re-checks every held port.
      for (const chain of chains) {
        const listing = await read(['list', 'chain', fw.nft.family, fw.nft.table, chain]);
        for (const { port, tag } of rules) {
          if (listing.includes(comment(tag))) continue;
          await run(['add', 'rule', fw.nft.family, fw.nft.table, chain, 'meta', 'l4proto', '{', 'tcp', ',', 'udp', '}', 'th', 'dport', String(port), 'accept', 'comment', `"${tag}"`]);
          added++;
        }
      }
      return added;
    },
    async remove(port, tag) {
      if (fw.tool === 'none') return;
      if (fw.tool === 'ufw') {
        for (const args of [['delete', 'allow', String(port)], ['delete', 'allow', 'out', String(port)]]) {
          const res = await runArgv(argv(args), { timeoutMs: 30_000, logFile });
          // A rule already gone is what a removal wants ("Could not delete non-existent rule").
          if (res.code !== 0 && !/non-existent/i.test(res.output)) throw new ApiError(500, 'CommandFailed', `${fw.command[0]} ${args.join(' ')} exited with code ${res.code}: ${res.output.trim().slice(-300)}`);
        }
        return;
      }
      const tagged = new RegExp(`${comment(tag).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} # handle (\\d+)`, 'g');
      for (const chain of chains) {
        const listing = await read(['-a', 'list', 'chain', fw.nft.family, fw.nft.table, chain]);
        for (const m of listing.matchAll(tagged)) await run(['delete', 'rule', fw.nft.family, fw.nft.table, chain, 'handle', m[1]]);
      }
    },
  };
}

export function firewallHandlers(config: NodeConfig, logFile: string) {
  const firewall = createFirewall(config.firewall, logFile);
  return {
    async allowport({ values }: HandlerInput) {
      // An integer from 1 to 65535 (the manifest's input) when given.
      const port = values.port as number | undefined;
      if (port === undefined) throw new ApiError(400, 'BadRequest', 'No Port address specified.');
      if (firewall.tool === 'none') throw new ApiError(501, 'NoFirewall', 'No firewall tool is configured on this node (node.firewall.tool)');
      await firewall.allow([{ port, tag: `corenode allow ${port}` }]);
      return { message: `Port ${port} allowed in and out` };
    },
  };
}
