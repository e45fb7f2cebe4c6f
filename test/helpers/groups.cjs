// Which test files run how (docs/testing.md). `npm test` (test/helpers/run.ts) runs the parallel group
// with several mocha workers, then the serial group one file at a time; both report into one
// result. Every file has its own database and Redis prefix, so the parallel group is the rule.
'use strict';
const { readdirSync } = require('node:fs');
const os = require('node:os');

/**
 * Files whose assertions compare against the wall clock and so must not share the machine with
 * the other test files: the per-key token bucket is exact only while its requests arrive within
 * one refill interval (1 s at the smallest rate the schema allows).
 */
const SERIAL = ['test/int/rate-limit.int.test.ts'];

/**
 * System tests: left out of the quick tier (`npm run test:quick`, TERN_TEST_TIER=quick), run by
 * `npm test`. They inject faults (Postgres and Redis stopped, killed or cut off under load), start
 * clusters, drive a browser, run Tern's processes the way an operator does (the Procfile,
 * `npm start`, systemd units, the `tern` CLI as a child process), or push a fuzz corpus through
 * every server and worker.
 */
const SYSTEM = [
  // Fault injection.
  'test/int/delivery-faults.int.test.ts',
  'test/int/delivery-outages.int.test.ts',
  'test/int/send-outages.int.test.ts',
  'test/int/failover.int.test.ts',
  'test/int/nodes.int.test.ts',
  'test/int/shutdown.int.test.ts',
  'test/int/webhooks-durability.int.test.ts',
  'test/int/inbound-durability.int.test.ts',
  // Clusters.
  'test/int/scale-out.int.test.ts',
  // Browsers.
  'test/int/console-browser.int.test.ts',
  'test/int/console-manage-browser.int.test.ts',
  'test/int/docs-page.int.test.ts',
  // The processes as an operator runs them.
  'test/int/procfile.int.test.ts',
  'test/int/start.int.test.ts',
  'test/int/start-private.int.test.ts',
  'test/int/start-services.int.test.ts',
  'test/int/systemd.int.test.ts',
  'test/int/cli.int.test.ts',
  'test/int/pool-cli.int.test.ts',
  'test/int/domain-cli.int.test.ts',
  'test/int/doctor.int.test.ts',
  // Fuzz corpora through the servers and workers.
  'test/int/mime-fuzz.int.test.ts',
];

/**
 * Started first, as they take longest (they mostly wait on processes they start): a long file
 * begun last would run on alone at the end of the run.
 */
const LONGEST = [
  'test/int/start.int.test.ts',
  'test/int/cli.int.test.ts',
  'test/int/delivery-outages.int.test.ts',
  'test/int/permissions.int.test.ts',
  'test/int/doctor.int.test.ts',
  'test/int/shutdown.int.test.ts',
  'test/int/delivery-waits.int.test.ts',
  'test/int/start-private.int.test.ts',
  'test/int/procfile.int.test.ts',
  'test/int/scale-out.int.test.ts',
  'test/int/failover.int.test.ts',
  'test/int/domains.int.test.ts',
  'test/int/delivery-faults.int.test.ts',
];

function allFiles() {
  return ['test/unit', 'test/int']
    .flatMap((dir) => readdirSync(dir, { recursive: true }).map((f) => `${dir}/${f}`))
    .filter((f) => f.endsWith('.test.ts'))
    .sort();
}

/**
 * The files of a group (`parallel`, `serial`, or every file), the longest first; the `quick` tier
 * leaves the system tests out.
 */
function files(group, tier) {
  const all = allFiles().filter((f) => tier !== 'quick' || !SYSTEM.includes(f));
  const chosen = all.filter((f) =>
    group === 'serial' ? SERIAL.includes(f) : group !== 'parallel' || !SERIAL.includes(f),
  );
  const rank = (f) => (LONGEST.includes(f) ? LONGEST.indexOf(f) : LONGEST.length);
  return chosen.sort((a, b) => rank(a) - rank(b));
}

/**
 * Mocha workers for the parallel group: twice the cores, as the files spend most of their time
 * waiting on Postgres, Redis, sockets and child processes. TERN_TEST_JOBS overrides it.
 */
function jobs() {
  return Number(process.env.TERN_TEST_JOBS) || Math.max(2, os.availableParallelism() * 2);
}

module.exports = { SERIAL, SYSTEM, LONGEST, files, jobs };
