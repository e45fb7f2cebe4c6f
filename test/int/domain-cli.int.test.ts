// `tern domain add` and `tern domain verify` through their command module, against the same database and Redis prefix as a
// running API (as an operator runs it next to the web processes).
import { expect } from 'chai';
import { domainAdd, domainVerify, type DomainCliContext } from '../../api/cli/commands/domain.js';
import { publishRecords, startDns, type ApiRecord, type TestDns } from '../helpers/dns.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

describe('tern domain add', () => {
  let api: TestApi;
  let org: SeededOrg;
  let dns: TestDns;

  before(async () => {
    dns = await startDns();
    api = await startApi({ env: { MX_HOST: 'mx.cli.test', DNS_SERVERS: dns.server } });
    org = await seedOrg(api.deps.sql);
  });
  after(async () => {
    await api.close();
    await dns.close();
  });

  function context(printed: { json: unknown[]; out: string[] }): DomainCliContext {
    return {
      config: () => api.config,
      env: { SECRET_KEY: api.config.secretKey },
      sql: () => api.deps.sql,
      redis: async () => api.deps.redis,
      out: (text) => void printed.out.push(text),
      json: (value) => void printed.json.push(value),
    };
  }

  it('--json prints the domain with its records; without --verified it stays pending', async () => {
    const printed = { json: [] as unknown[], out: [] as string[] };
    await domainAdd.run({ org: org.organization.id, name: 'Cli.Example', json: true }, context(printed));
    expect(printed.json).to.have.length(1);
    const { domain } = printed.json[0] as { domain: Record<string, unknown> & { records: { record: string }[] } };
    expect(Object.keys(domain)).to.deep.equal(['id', 'name', 'status', 'warmup', 'records']);
    expect(domain).to.include({ name: 'cli.example', status: 'pending' });
    expect(domain.records.map((r) => r.record)).to.deep.equal(['DKIM', 'SPF', 'MX_BOUNCE', 'MX_REPLY', 'DMARC']);
    expect(JSON.stringify(domain)).not.to.contain('PRIVATE');
    const res = await api.request('GET', `/domains/${domain.id as string}`, { token: org.key.token });
    expect(res.json.records).to.deep.equal(domain.records);
  });

  it('--verified marks it verified at once for running web processes', async () => {
    const before = await api.request('GET', '/keys/me', { token: org.key.token });
    expect(before.json.domains).not.to.include('forced.example');
    const printed = { json: [] as unknown[], out: [] as string[] };
    await domainAdd.run({ org: org.organization.id, name: 'forced.example', verified: true }, context(printed));
    expect(printed.out[0]).to.match(/^Domain {2}dom_\S+ {2}forced\.example {2}verified$/);
    expect(printed.out.join('\n')).to.contain('tern._domainkey.forced.example  TXT  v=DKIM1; k=rsa; p=');
    expect(printed.out.join('\n')).to.contain('reply.forced.example  MX  10 mx.cli.test');
    // The invalidation travels over Redis pub/sub: every web process drops its cached entry long
    // before its 30 s expiry.
    await waitFor(
      'the web process to see the new domain',
      async () =>
        (await api.request('GET', '/keys/me', { token: org.key.token })).json.domains.includes('forced.example'),
      10_000,
    );
  });

  it('verify: a domain added without --verified fails while unpublished and is verified once its records are', async () => {
    const printed = { json: [] as unknown[], out: [] as string[] };
    await domainAdd.run({ org: org.organization.id, name: 'later.example', json: true }, context(printed));
    const { domain } = printed.json[0] as { domain: { id: string; records: ApiRecord[] } };
    const check = async () => {
      const out = { json: [] as unknown[], out: [] as string[] };
      await domainVerify.run({ org: org.organization.id, name: 'Later.Example' }, context(out));
      return out.out;
    };
    const first = await check();
    expect(first[0]).to.match(/^Domain {2}dom_\S+ {2}later\.example {2}failed$/);
    expect(first.join('\n')).to.match(/tern\._domainkey\.later\.example {2}TXT {2}v=DKIM1; .* {2}failed/);
    publishRecords(dns, domain.records);
    const second = await check();
    expect(second[0]).to.match(/^Domain {2}dom_\S+ {2}later\.example {2}verified$/);
    expect(second.join('\n')).to.match(/tern\._domainkey\.later\.example {2}TXT {2}v=DKIM1; .* {2}verified/);
    // The same events as the API's check, and the API sees the verdict.
    const events = await api.deps.sql<{ type: string }[]>`
      select type from events where domain_id = ${domain.id} and type like 'domain.%' order by id`;
    expect(events.map((e) => e.type)).to.include('domain.verified');
    const res = await api.request('GET', `/domains/${domain.id}`, { token: org.key.token });
    expect(res.json.status).to.equal('verified');
    let caught: unknown;
    await domainVerify
      .run({ org: org.organization.id, name: 'nope.example' }, context(printed))
      .catch((err: unknown) => (caught = err));
    expect((caught as Error).message).to.equal(`domain nope.example not found in organization ${org.organization.id}`);
  });

  it('fails with a message naming the problem: unknown org, bad name, duplicate', async () => {
    const ctx = context({ json: [], out: [] });
    const failures: [Record<string, string | boolean>, RegExp][] = [
      [{ org: 'org_nope', name: 'x.example' }, /organization org_nope not found/],
      [{ org: org.organization.id, name: 'not a domain' }, /--name: "not a domain" is not a valid domain name/],
      [{ org: org.organization.id, name: 'FORCED.example' }, /forced\.example already exists/],
    ];
    for (const [values, message] of failures) {
      let caught: unknown;
      await domainAdd.run(values, ctx).catch((err: unknown) => (caught = err));
      expect(caught, JSON.stringify(values)).to.be.instanceOf(Error);
      expect((caught as Error).message).to.match(message);
    }
  });
});
