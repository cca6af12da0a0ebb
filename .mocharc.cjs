// Tests are TypeScript run through tsx; the reporter ends with the "N passed, N failed" line CI reads.
module.exports = {
  // tsx/esm only: test files load through import() like the plugins the host imports, so core/ has one
  // copy in memory (with the CommonJS hook, require()d tests and import()ed plugins got two).
  import: ['tsx/esm'],
  spec: ['test/**/*.test.ts', 'plugins/**/*.test.ts'],
  reporter: './test/support/reporter.cjs',
  timeout: 30000,
  exit: true,
};
