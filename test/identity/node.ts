/** A node serving only the identity plugin (with the host's and the node plugin's routes). */
import { startNode, type StartOptions, type TestNode } from '../support/node.ts';

export { authHeader, login, type LoggedIn } from '../support/wallets.ts';

export function startIdentityNode(opts: StartOptions = {}): Promise<TestNode> {
  return startNode({ plugins: ['identity'], ...opts });
}

