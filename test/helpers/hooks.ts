// Root hooks: fail the run when a test file leaves a server, pool, worker or connection open,
// and drop the databases the run created.
import { dropCreatedDatabases } from './db.js';
import { drainLeaks } from './resources.js';

export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(180_000);
    const leaks = await drainLeaks();
    await dropCreatedDatabases();
    if (leaks.length > 0) throw new Error(`test files left resources open: ${leaks.join('; ')}`);
  },
};
