// `tern pool …` run as an operator runs it (a subprocess against the API's database): add, list,
// assign, unassign and remove with --json (one JSON object on the last line), the plain output,
// and the refusals of bad input (exit 2) and of unknown things (exit 1).
import { expect } from 'chai';
import { tern as runTern, type CliRun } from '../helpers/cli.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

/** `tern pool …` (test/helpers/cli.ts). */
const tern = (api: TestApi, args: string[]): Promise<CliRun> => runTern(api, ['pool', ...args]);

/** The JSON object on the last line of a successful run. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function lastJson(run: CliRun): any {
  expect(run.code, run.stderr).to.equal(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!);
}

describe('tern pool', function () {
  // Every step starts a `tern` process that loads the CLI from source: seconds each under the
  // parallel test run's load.
  this.timeout(600_000);
  let api: TestApi;
  let org: SeededOrg;
  let twin: SeededOrg;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'shared.test' }] });
    twin = await seedOrg(api.deps.sql, { domains: [{ name: 'shared.test', verified: false }] });
  });
  after(async () => api.close());

  it('add, list, assign, unassign and remove with --json', async () => {
    expect(lastJson(await tern(api, ['list', '--json']))).to.deep.equal({ pools: [] });

    const added = lastJson(
      await tern(api, [
        'add',
        '--name',
        'mkt',
        '--ip',
        '192.0.2.10, 2001:DB8::10',
        '--ehlo',
        'Out.Example.test',
        '--json',
      ]),
    );
    expect(Object.keys(added)).to.deep.equal(['pool']);
    expect(added.pool).to.include({ name: 'mkt', ehlo: 'out.example.test' });
    expect(added.pool.id).to.match(/^ipp_[0-9A-Z]{26}$/);
    expect(added.pool.addresses.map((a: { address: string }) => a.address)).to.deep.equal([
      '192.0.2.10',
      '2001:db8::10',
    ]);
    // Day 0 of the address warm-up: 50 a day.
    expect(added.pool.addresses[0]).to.include({ warmup_day: 0, daily_cap: 50 });

    // Adding to an existing pool keeps its EHLO name unless one is given.
    const grown = lastJson(await tern(api, ['add', '--name', 'mkt', '--ip', '192.0.2.11', '--json']));
    expect(grown.pool.ehlo).to.equal('out.example.test');
    expect(grown.pool.addresses).to.have.length(3);

    lastJson(await tern(api, ['add', '--name', 'tx', '--ip', '192.0.2.20', '--json']));
    const byOrg = lastJson(await tern(api, ['assign', '--pool', 'mkt', '--org', org.organization.id, '--json']));
    expect(byOrg.pool.assignments).to.deep.equal([{ org_id: org.organization.id, org_name: org.organization.name }]);
    const byDomain = lastJson(
      await tern(api, ['assign', '--pool', 'tx', '--domain', org.domains['acme.test']!.name, '--json']),
    );
    expect(byDomain.pool.assignments).to.deep.equal([
      { domain_id: org.domains['acme.test']!.id, domain: 'acme.test', org_id: org.organization.id },
    ]);
    // A name two organizations have is named by id.
    const twinDomain = twin.domains['shared.test']!.id;
    lastJson(await tern(api, ['assign', '--pool', 'tx', '--domain', twinDomain, '--json']));
    const byStream = lastJson(await tern(api, ['assign', '--pool', 'mkt', '--stream', 'Broadcast', '--json']));
    expect(byStream.pool.assignments).to.deep.include({ stream: 'broadcast' });
    // Assigning the stream another pool moves it.
    lastJson(await tern(api, ['assign', '--pool', 'tx', '--stream', 'broadcast', '--json']));

    const list = lastJson(await tern(api, ['list', '--json']));
    expect(list.pools.map((p: { name: string }) => p.name)).to.deep.equal(['mkt', 'tx']);
    expect(list.pools[0].assignments).to.deep.equal([{ org_id: org.organization.id, org_name: org.organization.name }]);
    expect(list.pools[1].assignments).to.have.deep.members([
      { domain_id: org.domains['acme.test']!.id, domain: 'acme.test', org_id: org.organization.id },
      { domain_id: twinDomain, domain: 'shared.test', org_id: twin.organization.id },
      { stream: 'broadcast' },
    ]);

    expect(lastJson(await tern(api, ['unassign', '--org', org.organization.id, '--json']))).to.deep.equal({
      unassigned: 1,
    });
    expect(lastJson(await tern(api, ['unassign', '--org', org.organization.id, '--json']))).to.deep.equal({
      unassigned: 0,
    });

    const removed = lastJson(await tern(api, ['remove', '--name', 'tx', '--json']));
    expect(removed.pool).to.include({ name: 'tx', removed: true });
    const after = lastJson(await tern(api, ['list', '--json']));
    expect(after.pools.map((p: { name: string }) => p.name)).to.deep.equal(['mkt']);
    const [left] = await api.deps.sql<{ n: number }[]>`select count(*)::int as n from ip_pool_assignments`;
    expect(left!.n).to.equal(0);
  });

  it('prints plain lines without --json', async () => {
    const run = await tern(api, ['list']);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.match(/^Pool {2}mkt {2}ipp_\S+ {2}EHLO out\.example\.test$/m);
    expect(run.stdout).to.match(/^ {2}address {3}192\.0\.2\.10 {2}warm-up day 0, 50 a day$/m);
  });

  it('refuses bad input (exit 2) and unknown pools, orgs, domains or taken addresses (exit 1)', async () => {
    const cases: [string[], number, RegExp][] = [
      [['add', '--name', 'x'], 2, /--ip is required/],
      [['add', '--name', 'bad name', '--ip', '192.0.2.1'], 2, /--name must be 1-64 letters/],
      [['add', '--name', 'x', '--ip', '192.0.2.300'], 2, /--ip: "192\.0\.2\.300" is not an IPv4 or IPv6 address/],
      [['add', '--name', 'x', '--ip', '0.0.0.0'], 2, /unspecified address/],
      [['add', '--name', 'x', '--ip', '192.0.2.1', '--ehlo', 'not a host'], 2, /--ehlo must be a fully qualified/],
      [['add', '--name', 'x', '--ip', '192.0.2.10'], 1, /192\.0\.2\.10 is already an address of pool mkt/],
      [['assign', '--pool', 'mkt'], 2, /exactly one of --org, --domain or --stream/],
      [['assign', '--pool', 'mkt', '--org', org.organization.id, '--stream', 'broadcast'], 2, /exactly one/],
      [['assign', '--pool', 'mkt', '--stream', 'bulk'], 2, /--stream must be one of transactional, broadcast/],
      [['assign', '--pool', 'nope', '--stream', 'broadcast'], 1, /pool nope not found/],
      [['assign', '--pool', 'mkt', '--org', 'org_nope'], 1, /organization org_nope not found/],
      [['assign', '--pool', 'mkt', '--domain', 'missing.test'], 1, /domain missing\.test not found/],
      [['assign', '--pool', 'mkt', '--domain', 'shared.test'], 1, /several organizations; name one by id/],
      [['remove', '--name', 'nope'], 1, /pool nope not found/],
      [['frobnicate'], 2, /unknown command/],
    ];
    for (const [args, code, message] of cases) {
      const run = await tern(api, args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).to.equal(code);
      expect(run.stderr, args.join(' ')).to.match(message);
      expect(run.stdout, args.join(' ')).to.equal('');
    }
    // Nothing was created by the refused commands.
    const list = lastJson(await tern(api, ['list', '--json']));
    expect(list.pools.map((p: { name: string }) => p.name)).to.deep.equal(['mkt']);
  });
});
