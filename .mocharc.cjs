// Mocha runs the TypeScript tests through tsx; the reporter prints the closing
// "N passed, N failed" line that CI reads.
module.exports = {
  'node-option': ['import=tsx'],
  spec: ['test/unit/**/*.test.ts', 'test/int/**/*.test.ts'],
  require: ['test/helpers/hooks.ts'],
  reporter: './test/helpers/reporter.cjs',
  timeout: 30000,
  slow: 2000,
};
