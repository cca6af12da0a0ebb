// Tests are TypeScript run through tsx; the reporter ends with the "N passed, N failed" line CI reads.
// No `spec` here: mocha adds a config spec to the paths given on the command line, so `npx mocha test/daemon`
// would run everything; `npm test` passes the full set (scripts/test.sh).
module.exports = {
  import: ['tsx'],
  // Root hook plugins: dist/ rebuilt when stale before any test (child processes run the shipped entry
  // points); the apps tests' dockerd and registry stopped after the run (started only when a test needs them).
  require: ['./test/support/entry.ts', './test/support/docker.ts'],
  extension: ['ts'],
  reporter: './test/support/reporter.cjs',
  timeout: 30000,
  exit: true,
};
