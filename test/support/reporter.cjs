// mocha's spec reporter, plus the closing line `N passed, N failed[, N skipped]` that CI reads.
// CORENODE_TEST_TIMES=1 also lists the test files by wall time and the process's CPU, slowest first: the
// suite's time budget (issue 10) is spent by a few files, and this shows which.
const Mocha = require('mocha');
const { EVENT_RUN_END, EVENT_TEST_END, EVENT_HOOK_END } = Mocha.Runner.constants;

class CorenodeReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const perFile = new Map();
    let last = Date.now();
    const charge = (runnable) => {
      const now = Date.now();
      const file = runnable.file ?? runnable.parent?.file ?? '(root)';
      perFile.set(file, (perFile.get(file) ?? 0) + (now - last));
      last = now;
    };
    if (process.env.CORENODE_TEST_TIMES) {
      runner.on(EVENT_TEST_END, charge);
      runner.on(EVENT_HOOK_END, charge);
    }
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats;
      if (process.env.CORENODE_TEST_TIMES) {
        const u = process.cpuUsage();
        process.stdout.write(`\ntimes (wall s per file; mocha process CPU ${Math.round((u.user + u.system) / 1e6)} s):\n`);
        for (const [f, ms] of [...perFile].sort((a, b) => b[1] - a[1])) process.stdout.write(`  ${(ms / 1000).toFixed(1).padStart(6)}  ${f.replace(process.cwd() + '/', '')}\n`);
      }
      const skipped = s.pending ? `, ${s.pending} skipped` : '';
      process.stdout.write(`\n${s.passes} passed, ${s.failures} failed${skipped}\n`);
    });
  }
}
module.exports = CorenodeReporter;
