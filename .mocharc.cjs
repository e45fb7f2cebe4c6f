// Mocha runs the TypeScript tests through tsx; the reporter prints the closing
// "N passed, N failed" line that CI reads.
// `npx mocha test/int/x.int.test.ts` runs that file only (mocha would otherwise add it to the spec list).
const explicit = process.argv.slice(2).some((a) => /\.test\.ts$/.test(a));

module.exports = {
  'node-option': ['import=tsx'],
  spec: explicit ? [] : ['test/unit/**/*.test.ts', 'test/int/**/*.test.ts'],
  require: ['test/helpers/hooks.ts'],
  reporter: './test/helpers/reporter.cjs',
  timeout: 30000,
  slow: 2000,
};
