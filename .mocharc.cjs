// Tests are TypeScript run through tsx; the reporter ends with the "N passed, N failed" line CI reads.
module.exports = {
  import: ['tsx'],
  spec: ['test/**/*.test.ts', 'plugins/**/*.test.ts'],
  reporter: './test/support/reporter.cjs',
  timeout: 30000,
  exit: true,
};
