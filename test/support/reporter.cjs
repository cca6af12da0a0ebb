// mocha's spec reporter, plus the closing line `N passed, N failed[, N skipped]` that CI reads.
// CORENODE_TEST_TIMES=1 also lists the test files by wall time, with the CPU each spent in the mocha process
// and in the child processes it started, slowest first: on 2 cores the suite is bound by CPU, and this
// shows which files spend it.
const Mocha = require('mocha');
const { EVENT_RUN_END, EVENT_TEST_END, EVENT_HOOK_END } = Mocha.Runner.constants;

/**
 * CPU ms of this process and of its children that ended (and were waited for: child nodes, daemons, git,
 * npm), from /proc/self/stat (utime, stime, cutime, cstime in clock ticks of 10 ms). Containers are
 * dockerd's children and are not counted.
 */
function cpu() {
  try {
    const f = require('node:fs').readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return { self: (Number(f[11]) + Number(f[12])) * 10, children: (Number(f[13]) + Number(f[14])) * 10 };
  } catch {
    return { self: 0, children: 0 };
  }
}

/**
 * This process's memory at the end of the run: resident now and at its peak (VmHWM), and the V8 heap in use.
 * Every process a test spawns is forked from this one, and a fork costs CPU in proportion to the resident
 * size (measured: 3.6 ms of CPU a spawn at 51 MB, 9.5 ms at 236 MB).
 */
function memory() {
  const mb = (b) => Math.round(b / 2 ** 20);
  let peak = '';
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'));
    if (m) peak = `, peak ${mb(Number(m[1]) * 1024)} MB`;
  } catch {}
  const u = process.memoryUsage();
  return `RSS ${mb(u.rss)} MB${peak}, V8 heap ${mb(u.heapUsed)} MB used of ${mb(u.heapTotal)}, outside it ${mb(u.external)} MB`;
}

class CorenodeReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const perFile = new Map();
    let last = { wall: Date.now(), ...cpu() };
    const charge = (runnable) => {
      const now = { wall: Date.now(), ...cpu() };
      const file = runnable.file ?? runnable.parent?.file ?? '(root)';
      const f = perFile.get(file) ?? { wall: 0, self: 0, children: 0 };
      f.wall += now.wall - last.wall;
      f.self += now.self - last.self;
      f.children += now.children - last.children;
      perFile.set(file, f);
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
        process.stdout.write(`\ntimes (per file: wall s, CPU s of the mocha process, CPU s of its child processes that ended; mocha process CPU ${Math.round((u.user + u.system) / 1e6)} s, ${memory()}):\n`);
        const s1 = (ms) => (ms / 1000).toFixed(1).padStart(6);
        for (const [f, t] of [...perFile].sort((a, b) => b[1].wall - a[1].wall)) process.stdout.write(`  ${s1(t.wall)} ${s1(t.self)} ${s1(t.children)}  ${f.replace(process.cwd() + '/', '')}\n`);
      }
      const skipped = s.pending ? `, ${s.pending} skipped` : '';
      process.stdout.write(`\n${s.passes} passed, ${s.failures} failed${skipped}\n`);
    });
  }
}
module.exports = CorenodeReporter;
