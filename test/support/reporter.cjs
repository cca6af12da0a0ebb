// mocha's spec reporter, plus the closing line `N passed, N failed[, N skipped]` that CI reads.
const Mocha = require('mocha');
const { EVENT_RUN_END } = Mocha.Runner.constants;

class CorenodeReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats;
      const skipped = s.pending ? `, ${s.pending} skipped` : '';
      process.stdout.write(`\n${s.passes} passed, ${s.failures} failed${skipped}\n`);
    });
  }
}
module.exports = CorenodeReporter;
