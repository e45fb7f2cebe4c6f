// The `tern` CLI run as an operator runs it: a subprocess with its environment, against the
// same database and Redis prefix as a running API.
import { expect } from 'chai';
import { cliJson, tern } from '../helpers/cli.js';
import { ConsoleClient } from '../helpers/console.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

describe('tern CLI', function () {
  // Every test starts `tern` processes, each of which loads the CLI from source.
  this.timeout(120_000);
  let api: TestApi;
  let org: SeededOrg;
  let other: SeededOrg;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    other = await seedOrg(api.deps.sql, { domains: [{ name: 'other.test' }] });
  });
  after(async () => api.close());

  async function keyCount(): Promise<number> {
    const [row] = await api.deps.sql<{ n: number }[]>`select count(*)::int as n from api_keys`;
    return row!.n;
  }

  it('user reset-password gives a new password that signs in, ends the old sessions, and refuses an unknown user', async () => {
    const old = new ConsoleClient(api.url);
    await old.login(org.user.email, org.user.password);
    expect((await old.get('/console')).status).to.equal(200);
    const run = await tern(api, ['user', 'reset-password', '--email', org.user.email.toUpperCase(), '--json']);
    const out = cliJson(run);
    expect(out.user).to.include({ email: org.user.email });
    expect(out.user.password).to.be.a('string').and.not.equal(org.user.password);
    expect(out.ended_sessions).to.equal(1);
    expect(run.stderr).to.contain('USER_PASSWORD_RESET');
    // The old session is gone; the new password signs in, the old one does not.
    const after = await old.get('/console');
    expect(after.status).to.be.oneOf([302, 303]);
    expect(after.headers.location).to.equal('/console/login');
    expect((await new ConsoleClient(api.url).login(org.user.email, out.user.password)).status).to.equal(303);
    expect((await new ConsoleClient(api.url).login(org.user.email, org.user.password)).status).to.not.equal(303);
    org.user.password = out.user.password;

    const unknown = await tern(api, ['user', 'reset-password', '--email', 'nobody@nowhere.test']);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.contain('no console user has the e-mail address nobody@nowhere.test');
  });

  it('migrate --json reports nothing to apply on a migrated database', async () => {
    expect(cliJson(await tern(api, ['migrate', '--json']))).to.deep.equal({ applied: [] });
  });

  it('org create --json prints exactly the bootstrap shape, and the key works', async () => {
    const out = cliJson(
      await tern(api, ['org', 'create', '--name', 'Acme', '--admin-email', 'ops@acme.test', '--json']),
    );
    expect(Object.keys(out)).to.deep.equal(['organization', 'user', 'key']);
    expect(Object.keys(out.organization)).to.deep.equal(['id', 'name']);
    expect(Object.keys(out.user)).to.deep.equal(['id', 'email', 'password']);
    expect(Object.keys(out.key)).to.deep.equal(['id', 'token', 'permission', 'mode']);
    expect(out.organization.id).to.match(/^org_[0-9A-Z]{26}$/);
    expect(out.organization.name).to.equal('Acme');
    expect(out.user.id).to.match(/^usr_/);
    expect(out.user.email).to.equal('ops@acme.test');
    expect(out.user.password).to.be.a('string').with.length.greaterThan(11);
    expect(out.key).to.include({ permission: 'ADMIN', mode: 'live' });
    expect(out.key.token).to.match(/^tern_live_[0-9A-Za-z]{43}$/);

    const me = await api.request('GET', '/keys/me', { token: out.key.token });
    expect(me.status).to.equal(200);
    expect(me.json).to.include({ id: out.key.id, permission: 'ADMIN', mode: 'live' });
  });

  it('org create refuses a second user with the same e-mail (exit 1)', async () => {
    const run = await tern(api, ['org', 'create', '--name', 'Again', '--admin-email', 'OPS@acme.test']);
    expect(run.code).to.equal(1);
    expect(run.stderr).to.contain('already exists');
  });

  it('key mint --json prints exactly the key shape; the key works against the API', async () => {
    const out = cliJson(
      await tern(api, [
        'key',
        'mint',
        '--org',
        org.organization.id,
        '--permission',
        'SEND',
        '--mode',
        'test',
        '--domains',
        `beta.test,${org.domains['acme.test']!.id}`,
        '--name',
        'ci sender',
        '--json',
      ]),
    );
    expect(Object.keys(out)).to.deep.equal(['key']);
    expect(Object.keys(out.key)).to.deep.equal([
      'id',
      'token',
      'name',
      'permission',
      'mode',
      'domains',
      'token_prefix',
    ]);
    expect(out.key).to.include({ name: 'ci sender', permission: 'SEND', mode: 'test' });
    expect(out.key.domains).to.deep.equal(['beta.test', 'acme.test']);
    expect(out.key.token).to.match(/^tern_test_/);
    expect(out.key.token_prefix).to.equal(out.key.token.slice(0, 12));

    const me = await api.request('GET', '/keys/me', { token: out.key.token });
    expect(me.status).to.equal(200);
    expect(me.json).to.deep.equal({
      id: out.key.id,
      name: 'ci sender',
      mode: 'test',
      permission: 'SEND',
      domains: ['acme.test', 'beta.test'],
    });
  });

  it('refuses an ADMIN test key with a clear message (exit 2) and mints nothing', async () => {
    const before = await keyCount();
    const run = await tern(api, [
      'key',
      'mint',
      '--org',
      org.organization.id,
      '--permission',
      'ADMIN',
      '--mode',
      'test',
    ]);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.contain('--mode').and.to.contain('ADMIN keys are live only');
    expect(run.stdout).to.equal('');
    expect(await keyCount()).to.equal(before);
  });

  it('fails (exit 1) for an unknown organization and for a domain of another organization', async () => {
    const unknown = await tern(api, ['key', 'mint', '--org', 'org_nope', '--permission', 'SEND', '--mode', 'live']);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.contain('organization org_nope not found');

    const foreign = await tern(api, [
      'key',
      'mint',
      '--org',
      org.organization.id,
      '--permission',
      'FULL',
      '--mode',
      'live',
      '--domains',
      'other.test',
    ]);
    expect(foreign.code).to.equal(1);
    expect(foreign.stderr).to.contain('--domains').and.to.contain('other.test');
    expect(other.domains['other.test']).to.exist;
  });

  it('answers bad flags with exit 2 and a message naming the flag', async () => {
    const cases: [string[], string][] = [
      [['key', 'mint', '--org', org.organization.id, '--bogus'], '--bogus'],
      [['key', 'mint', '--org', org.organization.id, '--mode', 'live'], '--permission is required'],
      [['key', 'mint', '--org', org.organization.id, '--permission', 'ROOT', '--mode', 'live'], '--permission'],
      [['key', 'mint', '--org', org.organization.id, '--permission', 'SEND', '--mode', 'prod'], '--mode'],
      [['org', 'create', '--name', 'X', '--admin-email', 'not-an-email'], '--admin-email'],
      [['key', 'revoke'], '--id is required'],
      [['key', 'frobnicate'], 'unknown command'],
    ];
    // Independent processes: started together, so a loaded machine waits for them once, not seven times.
    const runs = await Promise.all(cases.map(([args]) => tern(api, args)));
    for (const [i, [args, needle]] of cases.entries()) {
      expect(runs[i]!.code, args.join(' ')).to.equal(2);
      expect(runs[i]!.stderr, args.join(' ')).to.contain(needle);
    }
  });

  it('prints help for a command with exit 0 and needs no environment for it', async () => {
    const run = await tern(api, ['key', 'mint', '--help'], { DATABASE_URL: 'not a url' });
    expect(run.code).to.equal(0);
    expect(run.stdout).to.contain('--permission <SEND|FULL|ADMIN>').and.to.contain('--domains');
  });

  it('fails (exit 1) on a bad environment, naming the variable', async () => {
    const run = await tern(api, ['key', 'list', '--org', org.organization.id], { LOG_LEVEL: 'loud' });
    expect(run.code).to.equal(1);
    expect(run.stderr).to.contain('LOG_LEVEL');
  });

  it('key list --json lists the keys without tokens', async () => {
    const k = await org.mint({ permission: 'FULL', mode: 'live', domains: ['acme.test'] });
    const out = cliJson(await tern(api, ['key', 'list', '--org', org.organization.id, '--json']));
    const row = out.data.find((r: { id: string }) => r.id === k.id);
    expect(row).to.include({ permission: 'FULL', mode: 'live', revoked_at: null });
    expect(row.domains).to.deep.equal(['acme.test']);
    expect(JSON.stringify(out)).not.to.contain(k.token);
    expect(out.data.map((r: { id: string }) => r.id)).to.include(org.key.id);
  });

  it('key revoke makes a running API refuse a warm key within 1 s', async () => {
    const k = await org.mint({ permission: 'SEND', mode: 'live' });
    expect((await api.request('GET', '/keys/me', { token: k.token })).status).to.equal(200);
    const lookups = api.deps.auth.dbLookups;
    expect((await api.request('GET', '/keys/me', { token: k.token })).status).to.equal(200);
    expect(api.deps.auth.dbLookups, 'the key is served from the cache').to.equal(lookups);

    const out = cliJson(await tern(api, ['key', 'revoke', '--id', k.id, '--json']));
    expect(out.key).to.include({ id: k.id, org_id: org.organization.id });
    expect(Date.parse(out.key.revoked_at)).to.be.a('number').and.not.NaN;
    // Long before the 30 s cache entry would expire: the CLI's invalidation reached the web process.
    await waitFor(
      'the web process to refuse the revoked key',
      async () => (await api.request('GET', '/keys/me', { token: k.token })).status === 401,
      10_000,
    );

    const again = await tern(api, ['key', 'revoke', '--id', 'key_unknown']);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.contain('key key_unknown not found');
  });
});
