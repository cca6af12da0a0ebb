/**
 * Run by interrupt.test.ts as a mocha process of its own (not a test of the suite: no `.test.ts`): starts a
 * PostgreSQL and a litecoind as the explorer tests do, prints where they are, then waits to be interrupted.
 */
import { startPostgres } from './postgres.ts';
import { startLitecoind } from '../support/litecoind.ts';

describe('a test run interrupted while its daemons run', function () {
  this.timeout(0);
  it('starts PostgreSQL and litecoind, then waits', async () => {
    const pg = await startPostgres();
    const ltc = await startLitecoind();
    process.stdout.write(`\nREADY ${JSON.stringify({ pgPid: pg.pid(), ltcPid: ltc.pid, ltcDir: ltc.datadir })}\n`);
    await new Promise(() => {});
  });
});
