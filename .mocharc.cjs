// Mocha runs the TypeScript tests through tsx, each file in a worker of its own (--parallel: every
// file has its own database and Redis prefix); the reporter prints the closing "N passed, N failed"
// line that CI reads. TERN_TEST_GROUP (set by test/helpers/run.ts, which `npm test` runs) picks the
// parallel or the serial group of test/helpers/groups.cjs; plain `npx mocha` runs every file in parallel.
// `npx mocha test/int/x.int.test.ts` runs that file only, in this process (mocha would otherwise
// add it to the spec list).
const groups = require('./test/helpers/groups.cjs');

const explicit = process.argv.slice(2).some((a) => /\.test\.ts$/.test(a));
const group = process.env.TERN_TEST_GROUP;

module.exports = {
  'node-option': ['import=tsx'],
  spec: explicit ? [] : groups.files(group, process.env.TERN_TEST_TIER),
  require: ['test/helpers/hooks.ts'],
  reporter: './test/helpers/reporter.cjs',
  parallel: !explicit,
  jobs: group === 'serial' ? 1 : groups.jobs(),
  // Generous: with a worker per half core, a test can take many times its time on a quiet machine.
  timeout: 60000,
  slow: 2000,
};
