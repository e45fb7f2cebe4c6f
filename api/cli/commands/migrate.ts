// `tern migrate`: applies pending sql/*.sql migrations (the Procfile's `release` line).
import { migrate } from '../../../shared/db/migrate.js';
import type { Command } from '../command.js';

const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply pending database migrations (safe to run concurrently)',
  options: {
    json: { type: 'boolean', help: 'print {"applied":[names]}' },
  },
  async run(values, ctx) {
    const applied = await migrate(ctx.sql());
    if (values.json) return ctx.json({ applied });
    if (applied.length === 0) return ctx.out('Database is up to date.');
    for (const name of applied) ctx.out(`applied ${name}`);
    ctx.out(`${applied.length} migration(s) applied.`);
  },
};

export const migrateCommands: Command[] = [migrateCommand];
