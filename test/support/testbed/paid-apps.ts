/**
 * Paid global apps on the testbed (after `startApps`): an owner registers a signed specification on one
 * node and pays for it on the testbed's chain, as a person does on the devnet (test/testbed/devnet.test.ts);
 * the daemon's wallet pays (`fundChain` gives it mature coins). The payment waits until every running node
 * holds the registration, so that "from the payment's confirmation" starts when every node could act on it.
 */
import { component, pay, signedMessage, v8Spec } from '../../apps/support.ts';
import { eventually } from '../wait.ts';
import { login } from '../wallets.ts';
import type { Testbed, TestbedNode } from './index.ts';
import type { Wallet } from './keys.ts';

export { component, v8Spec };

const data = (a: { json?: any; status: number; text: string }) => {
  if (a.json?.status !== 'success') throw new Error(`not a success: ${a.status} ${a.text.slice(0, 300)}`);
  return a.json.data;
};

/**
 * The command of a sample-image component: its httpd serving `dir` on 8080, under a shell that ends at
 * SIGTERM. The image's own httpd runs as PID 1 with no SIGTERM action, so every stop of it waited out
 * Docker's 10 s grace: a surplus instance's removal took 10 of the 17 s from a restart to the trim
 * (measured), which is Docker's wait for this image, not placement.
 */
export const serveOnSigterm = (dir = '/www') => ['/bin/sh', '-c', `trap "exit 0" TERM; /bin/httpd -f -p 8080 -h ${dir} & wait`];

/** Mature coinbases in the daemon's wallet, which pays for the apps. */
export async function fundChain(tb: Testbed): Promise<void> {
  await tb.chain.ltc.mine(101);
}

export interface PaidApp {
  name: string;
  hash: string;
  txid: string;
  /** The height of the block holding the payment: the app expires at `height + expire`. */
  height: number;
  /** When the block holding the payment was mined (this process's clock). */
  confirmedAt: number;
}

/** The running nodes. */
const live = (tb: Testbed) => tb.nodes.filter((n) => n.running());

/**
 * Register `spec` on `on` signed by `owner`, wait until every running node holds the temporary message,
 * pay the price to `registryAddress`, mine the block, and wait until the app is global on every running
 * node.
 */
export async function registerAndPay(tb: Testbed, on: TestbedNode, owner: Wallet, registryAddress: string, spec: Record<string, any>): Promise<PaidApp> {
  const auth = { legacyidauth: (await login(on, owner)).header };
  const hash = data(await on.post('/apps/appregister', await signedMessage(owner, spec), auth)) as string;
  await eventually(async () => (await Promise.all(live(tb).map(async (n) => (data(await n.get(`/apps/temporarymessages/${hash}`)) as unknown[]).length))).every((l) => l === 1), {
    what: `the registration of ${spec.name} on every node`,
    everyMs: 300,
    timeoutMs: 30_000,
  });
  const txid = await pay(tb.chain.ltc, registryAddress, data(await on.post('/apps/calculateprice', spec)), hash);
  await tb.chain.ltc.mine(1);
  const confirmedAt = Date.now();
  const height = await tb.chain.ltc.rpc.call<number>('getblockcount', []);
  await globalOnAll(tb, spec.name);
  return { name: spec.name, hash, txid, height, confirmedAt };
}

/** Wait until the app is a global specification on every running node. */
export async function globalOnAll(tb: Testbed, app: string, timeoutMs = 30_000): Promise<void> {
  await eventually(async () => (await Promise.all(live(tb).map(async (n) => (await n.get(`/apps/appspecifications/${app}`)).json?.status))).every((s) => s === 'success'), {
    what: `${app} global on every node`,
    everyMs: 300,
    timeoutMs,
  });
}
