// `npm run schema:dump`: rewrites test/schema.sql from what the migrations in sql/ build.
import { writeFile } from 'node:fs/promises';
import { currentSchema, SCHEMA_FILE } from './schema.js';

await writeFile(SCHEMA_FILE, await currentSchema());
console.log(`wrote ${SCHEMA_FILE}`);
