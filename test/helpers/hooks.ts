// Root hooks: fail the run when a test file leaves a server, pool, worker or connection open,
// and drop the databases the run created.
import { dropCreatedDatabases } from './db.js';
import { drainLeaks } from './resources.js';

export const mochaHooks = {
  async afterAll(): Promise<void> {
    const leaks = await drainLeaks();
    await dropCreatedDatabases();
    if (leaks.length > 0) throw new Error(`test files left resources open: ${leaks.join('; ')}`);
  },
};
