/**
 * Set-up of the daemon and benchmark tests: a node serving only these plugins and the fixture plugin (a
 * test-double session resolver and a consumer of the daemon service), pointed at a real litecoind in regtest.
 */
import { OPERATOR, isolatedPlugins, sessionFor } from '../support/fixture.ts';
import { startNode, type StartOptions, type TestNode } from '../support/node.ts';
import type { Regtest } from '../support/litecoind.ts';

export { OPERATOR, USER as MEMBER, isolatedPlugins } from '../support/fixture.ts';
export { ok, err } from '../support/envelope.ts';


/** The `legacyidauth` header of a fixture session of `legacyid`. */
export const authAs = sessionFor;

export async function startDaemonNode(ltc: Pick<Regtest, 'url' | 'user' | 'password'> | null, daemon: Record<string, unknown> = {}, opts: StartOptions = {}): Promise<TestNode> {
  const dirs = isolatedPlugins('daemon');
  const rpc = ltc ? { url: ltc.url, user: ltc.user, password: ltc.password } : undefined;
  const node = await startNode({
    ...opts,
    manifestsDir: dirs.manifestsDir,
    config: { pluginsDir: dirs.pluginsDir, initial: { legacyid: OPERATOR }, daemon: { ...(rpc ? { rpc } : {}), ...daemon }, ...opts.config },
  });
  const close = node.close;
  node.close = async (o) => {
    await close(o);
    dirs.cleanup();
  };
  return node;
}

