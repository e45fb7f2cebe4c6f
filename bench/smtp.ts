// bench/smtp: SMTP intake. Relay half: nodemailer pooled transport → a bare smtp-server that
// accepts everything (the floor), against the Tern relay accepting authenticated messages from a
// test key to queued emails (STARTTLS, AUTH, key checks, rate-limit token, header parsing,
// stripping X-Tern-*, one Postgres transaction and one BullMQ add per message). Targets: relay
// ≥ 200 messages/s and ratio ≥ 0.3. (The MX half, MX intake → parsed inbound records, is added
// beside it.)
import { createOrganization } from '../shared/bootstrap.js';
import { insertDomain } from '../shared/db/domains.js';
import { mintKey } from '../shared/db/keys.js';
import { setOrgRateLimit } from '../shared/db/orgs.js';
import type { MeasureOptions } from './lib/measure.js';
import { startServer, type Child } from './lib/processes.js';
import { alternateSmtp } from './lib/smtp-measure.js';
import { createBenchStack } from './lib/stack.js';

export const description = 'SMTP relay (authenticated messages → queued emails) vs a bare smtp-server';

const message = () => ({
  envelope: { from: 'hello@bench.test', to: ['someone@example.net'] },
  from: 'Bench <hello@bench.test>',
  to: 'someone@example.net',
  subject: 'Benchmark message',
  text: 'Hello from the relay benchmark.\n'.repeat(20),
  html: `<p>${'Hello from the relay benchmark. '.repeat(20)}</p>`,
  headers: { 'X-Tern-Tags': 'bench=smtp', 'X-Tern-Kind': 'bench' },
});

export async function run(measure: MeasureOptions): Promise<void> {
  const stack = await createBenchStack();
  const children: Child[] = [];
  try {
    const org = await createOrganization(stack.sql, 'tern', { name: 'Bench', adminEmail: 'bench@example.test' });
    const orgId = org.organization.id;
    await setOrgRateLimit(stack.sql, orgId, { perSecond: 100000, burst: 100000 });
    await insertDomain(stack.sql, { orgId, name: 'bench.test', status: 'verified' });
    const { key, token } = await mintKey(stack.sql, 'tern', {
      orgId,
      name: 'bench relay (test)',
      mode: 'test',
      permission: 'SEND',
      domainIds: [],
      createdBy: null,
    });
    const floor = await startServer('bench/servers/smtp-floor', {});
    children.push(floor);
    const relay = await startServer('bench/servers/relay', {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    });
    children.push(relay);
    // SMTP connections are heavier than HTTP requests: default to fewer of them than bench/api.
    const connections = Math.min(measure.connections, 10);
    console.log(
      `bench/smtp (relay): ${measure.pairs} pairs of ${measure.sliceSeconds} s slices, ${connections} pooled connections`,
    );
    const s = await alternateSmtp(
      { name: 'floor', port: floor.port, auth: { user: 'bench', pass: 'bench' }, message },
      { name: 'relay', port: relay.port, auth: { user: key.id, pass: token }, message },
      { ...measure, connections },
    );
    const [row] = await stack.sql<{ n: string }[]>`select count(*) as n from emails where source = 'smtp'`;
    const n = row?.n ?? '0';
    console.log(`  relay stored ${n} queued emails`);
    const verdict = s.tern >= 200 && s.ratio >= 0.3 ? 'meets' : 'misses';
    console.log(`  target (relay ≥ 200 msg/s, ratio ≥ 0.3): ${verdict}`);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await stack.drop();
  }
}
