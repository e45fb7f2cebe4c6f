// Mocha's spec reporter plus one plain closing line, "N passed, N failed[, N skipped]", which CI
// reads (prefixed "<group> group: " in a run of one group of test/helpers/groups.cjs, whose total
// test/helpers/run.ts prints). With TERN_TEST_RESULTS set, the counts are also written there as JSON.
'use strict';
const Mocha = require('mocha');
const fs = require('node:fs');

const { EVENT_RUN_END } = Mocha.Runner.constants;

class TernReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || { passes: 0, failures: 0, pending: 0 };
      const group = process.env.TERN_TEST_GROUP ? `${process.env.TERN_TEST_GROUP} group: ` : '';
      const line = `${group}${s.passes} passed, ${s.failures} failed${s.pending ? `, ${s.pending} skipped` : ''}`;
      // After the spec reporter's own epilogue.
      process.nextTick(() => process.stdout.write(`\n${line}\n`));
      if (process.env.TERN_TEST_RESULTS) {
        fs.writeFileSync(
          process.env.TERN_TEST_RESULTS,
          JSON.stringify({ passed: s.passes, failed: s.failures, skipped: s.pending }),
        );
      }
    });
  }
}

module.exports = TernReporter;
