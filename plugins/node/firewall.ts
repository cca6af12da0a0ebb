/**
 * `allowport/:port`: allow a port in and out through the node's firewall, by `ufw` or `nft` argument
 * vectors (never a shell string: the port is checked to be an integer first, then passed as one argument).
 * nft rules go into the operator's existing filter chains (an accept in a table of our own would not
 * override a drop in theirs), tagged with a comment so a second call adds nothing.
 */
import { ApiError, type HandlerInput } from '../../core/plugin-api.ts';
import { mustRun } from './procs.ts';
import type { NodeConfig } from './settings.ts';

export function firewallHandlers(config: NodeConfig, logFile: string) {
  const fw = config.firewall;
  const run = (args: string[]) => mustRun([...fw.command, ...args], { timeoutMs: 30_000, logFile });

  async function nftAllow(port: number) {
    const tag = `corenode allow ${port}`;
    for (const chain of [fw.nft.inputChain, fw.nft.outputChain]) {
      const listing = await run(['list', 'chain', fw.nft.family, fw.nft.table, chain]);
      if (listing.includes(`comment "${tag}"`)) continue;
      await run(['add', 'rule', fw.nft.family, fw.nft.table, chain, 'meta', 'l4proto', '{', 'tcp', ',', 'udp', '}', 'th', 'dport', String(port), 'accept', 'comment', `"${tag}"`]);
    }
  }

  return {
    async allowport({ values }: HandlerInput) {
      // An integer from 1 to 65535 (the manifest's input) when given.
      const port = values.port as number | undefined;
      if (port === undefined) throw new ApiError(400, 'BadRequest', 'No Port address specified.');
      if (fw.tool === 'none') throw new ApiError(501, 'NoFirewall', 'No firewall tool is configured on this node (node.firewall.tool)');
      if (fw.tool === 'ufw') {
        await run(['allow', String(port)]);
        await run(['allow', 'out', String(port)]);
      } else await nftAllow(port);
      return { message: `Port ${port} allowed in and out` };
    },
  };
}
