// Root hooks, run when a test file ends (mocha --parallel gives every file its own root suite; a
// plain `mocha file` run ends with its only file): fail the file when it left a server, pool,
// worker or connection open, or keys under one of its Redis prefixes; close and delete what was
// left either way, and drop the databases it created. With TERN_TEST_TIMINGS set, each file's
// time is recorded (test/helpers/timings.ts).
import { dropCreatedDatabases } from './db.js';
import { leftoverKeys } from './redis-prefix.js';
import { drainLeaks } from './resources.js';
import { recordTiming, startTiming } from './timings.js';

export const mochaHooks = {
  beforeAll(): void {
    startTiming();
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(180_000);
    const leaks = await drainLeaks();
    const undropped = await dropCreatedDatabases();
    // After the leak check has closed whatever was left, so nothing writes under a prefix any more.
    const keys = await leftoverKeys();
    recordTiming(this.test?.parent);
    const problems = [
      ...(leaks.length > 0 ? [`left resources open: ${leaks.join('; ')}`] : []),
      ...(keys.length > 0 ? [`left keys in Redis: ${keys.join('; ')}`] : []),
      ...(undropped.length > 0 ? [`made databases that cannot be dropped: ${undropped.join('; ')}`] : []),
    ];
    if (problems.length > 0) throw new Error(`the test file ${problems.join(' and ')}`);
  },
};
