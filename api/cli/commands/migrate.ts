// `tern migrate`: applies pending sql/*.sql migrations (the Procfile's `release` line). With
// SECRET_KEY set, it then seals the stored secrets that were never sealed (rows from before
// secrets at rest were sealed: shared/secrets-seal.ts); without it, there is nothing to seal with.
import { loadConfig } from '../../../shared/config.js';
import { migrate } from '../../../shared/db/migrate.js';
import { sealStoredSecrets } from '../../../shared/secrets-seal.js';
import { secretBox } from '../../../shared/secrets.js';
import type { Command } from '../command.js';

const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply pending database migrations (safe to run concurrently); seal plain-text secrets',
  options: {
    json: { type: 'boolean', help: 'print {"applied":[names]} (and "sealed": n when SECRET_KEY is set)' },
  },
  async run(values, ctx) {
    const applied = await migrate(ctx.sql());
    const sealed = ctx.env.SECRET_KEY
      ? (await sealStoredSecrets(ctx.sql(), secretBox(loadConfig(ctx.env)), { plainOnly: true })).sealed
      : null;
    if (values.json) return ctx.json(sealed === null ? { applied } : { applied, sealed });
    if (applied.length === 0) ctx.out('Database is up to date.');
    for (const name of applied) ctx.out(`applied ${name}`);
    if (applied.length > 0) ctx.out(`${applied.length} migration(s) applied.`);
    if (sealed) ctx.out(`${sealed} stored secret(s) sealed with SECRET_KEY.`);
  },
};

export const migrateCommands: Command[] = [migrateCommand];
