// The stock `resend` SDK against a running Tern, method by method. TABLE below is the source of the
// table in docs/api/resend.md: every public method of every SDK resource has a row, each `works` or
// `differs` row is called by a test here and must succeed, each `not offered` row is called and
// must be refused with the code it names. `TERN_WRITE_DOCS=1` rewrites the table in the docs from
// TABLE; without it the test fails when the two differ.
//
// The calls run at a key's default rate (10/s, burst 20): the SDK does not retry a 429, so the test
// paces itself as Resend's docs tell a script to, one request per tick of the key's rate.
import { readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { Resend } from 'resend';
import { insertRuns } from '../../shared/db/automations.js';
import { insertInbound, saveParsedInbound } from '../../shared/db/inbound.js';
import { newId } from '../../shared/ids.js';
import { standardWebhookHeaders } from '../../shared/webhooks/standard-signing.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { waitFor } from '../helpers/wait.js';
import { startApi, type TestApi } from '../helpers/stack.js';

type Status = 'works' | 'differs' | 'not offered';
interface Row {
  status: Status;
  /** How it differs, or why it is not offered. */
  note?: string;
  /** A `not offered` row: the call and the error code Tern answers it with. */
  probe?: [(r: Resend) => PromiseLike<unknown>, string];
}

const NF = 'not_found';
const TABLE: Record<string, Row> = {
  'apiKeys.create': {
    status: 'works',
    note: '`full_access` is FULL, `sending_access` SEND; `domain_id` restricts the key to that domain',
  },
  'apiKeys.list': { status: 'works', note: "Tern's key objects (tier, mode, domains)" },
  'apiKeys.update': {
    status: 'not offered',
    note: 'a key keeps its name and tier: mint a new one and revoke the old',
    probe: [(r) => r.apiKeys.update('key_x', { name: 'y' }), 'method_not_allowed'],
  },
  'apiKeys.remove': { status: 'works', note: 'revokes the key' },

  // The SDK sends audiences.* to /segments (`resend.audiences` is `resend.segments`).
  'audiences.create': { status: 'works', note: 'the same call as segments.create' },
  'audiences.list': { status: 'works', note: 'the same call as segments.list' },
  'audiences.get': { status: 'works', note: 'the same call as segments.get' },
  'audiences.update': { status: 'works', note: 'the same call as segments.update' },
  'audiences.remove': { status: 'works', note: 'the same call as segments.remove' },

  'automations.create': {
    status: 'not offered',
    note: "Tern's automations take their own definition (automations.md), which Resend's body is not",
    probe: [(r) => r.automations.create({ name: 'x', steps: [], connections: [] } as never), 'validation_error'],
  },
  'automations.list': { status: 'works', note: "the objects are Tern's automations" },
  'automations.get': { status: 'works', note: "the objects are Tern's automations" },
  'automations.update': {
    status: 'not offered',
    note: 'as automations.create',
    probe: [
      (r) => r.automations.update('aut_x', { name: 'y', steps: [], connections: [] } as never),
      'validation_error',
    ],
  },
  'automations.remove': { status: 'works' },
  'automations.duplicate': {
    status: 'not offered',
    note: 'create a copy with POST /automations',
    probe: [(r) => r.automations.duplicate('aut_x'), NF],
  },
  'automations.stop': {
    status: 'not offered',
    note: 'PATCH /automations/{id} with `status: "disabled"` stops one',
    probe: [(r) => r.automations.stop('aut_x'), NF],
  },
  'automations.runs.list': { status: 'works' },
  'automations.runs.get': { status: 'works' },

  'batch.send': { status: 'works', note: 'items may also carry attachments and scheduled_at' },
  'batch.create': { status: 'works', note: 'the same call as batch.send' },

  'broadcasts.create': { status: 'works' },
  'broadcasts.send': { status: 'works' },
  'broadcasts.list': { status: 'works' },
  'broadcasts.get': { status: 'works', note: "also carries Tern's `counts` of the send" },
  'broadcasts.update': { status: 'works' },
  'broadcasts.remove': { status: 'works' },
  'broadcasts.cancel': { status: 'works' },
  'broadcasts.duplicate': {
    status: 'not offered',
    note: 'create a new draft with broadcasts.create',
    probe: [(r) => r.broadcasts.duplicate('bc_x'), NF],
  },
  'broadcasts.recipients': {
    status: 'not offered',
    note: "a broadcast's messages are `GET /emails?tag=broadcast_id:<id>`",
    probe: [(r) => r.broadcasts.recipients('bc_x', { type: 'delivered' } as never), NF],
  },
  'broadcasts.clickedLinks': {
    status: 'not offered',
    note: "clicks are in the messages' events and in `GET /metrics`",
    probe: [(r) => r.broadcasts.clickedLinks('bc_x'), NF],
  },

  'contactProperties.create': {
    status: 'not offered',
    note: "a contact's `properties` are free-form: nothing to declare",
    probe: [(r) => r.contactProperties.create({ key: 'plan', type: 'string' } as never), NF],
  },
  'contactProperties.list': {
    status: 'not offered',
    note: 'as contactProperties.create',
    probe: [(r) => r.contactProperties.list(), NF],
  },
  'contactProperties.get': {
    status: 'not offered',
    note: 'as contactProperties.create',
    probe: [(r) => r.contactProperties.get('cp_x'), NF],
  },
  'contactProperties.update': {
    status: 'not offered',
    note: 'as contactProperties.create',
    probe: [(r) => r.contactProperties.update({ id: 'cp_x', fallbackValue: 'y' } as never), NF],
  },
  'contactProperties.remove': {
    status: 'not offered',
    note: 'as contactProperties.create',
    probe: [(r) => r.contactProperties.remove('cp_x'), NF],
  },

  'contacts.create': { status: 'works', note: 'an upsert by address' },
  'contacts.list': { status: 'works' },
  'contacts.get': { status: 'works', note: 'by id or address' },
  'contacts.update': { status: 'works' },
  'contacts.remove': { status: 'works' },
  'contacts.imports.create': { status: 'works' },
  'contacts.imports.list': { status: 'works' },
  'contacts.imports.get': { status: 'works' },
  'contacts.topics.update': { status: 'works' },
  'contacts.topics.list': { status: 'works' },
  'contacts.segments.add': {
    status: 'works',
    note: 'a segment made without a filter is static; added to a filter segment, the contact is in whatever the filter says',
  },
  'contacts.segments.list': { status: 'works', note: 'static and filter segments that hold the contact' },
  'contacts.segments.remove': { status: 'works', note: 'the contact stays out, whatever the filter says (FULL key)' },

  'domains.create': {
    status: 'differs',
    note: '`region` changes nothing (mail leaves from this install); `tls` takes `opportunistic` only (domains.md)',
  },
  'domains.list': { status: 'works' },
  'domains.get': { status: 'works' },
  'domains.update': { status: 'differs', note: 'tracking and `tls` as domains.create' },
  'domains.remove': { status: 'works' },
  'domains.verify': { status: 'works' },
  'domains.claims.create': {
    status: 'not offered',
    note: 'a domain belongs to the organization that verifies its DNS records',
    probe: [(r) => r.domains.claims.create({ name: 'x.test' } as never), 'method_not_allowed'],
  },
  'domains.claims.get': {
    status: 'not offered',
    note: 'as domains.claims.create',
    probe: [(r) => r.domains.claims.get('dom_x'), NF],
  },
  'domains.claims.verify': {
    status: 'not offered',
    note: 'as domains.claims.create',
    probe: [(r) => r.domains.claims.verify('dom_x'), NF],
  },

  'emails.send': { status: 'works' },
  'emails.create': { status: 'works', note: 'the same call as emails.send' },
  'emails.get': { status: 'works' },
  'emails.list': { status: 'works' },
  'emails.update': { status: 'works' },
  'emails.cancel': { status: 'works' },
  'emails.share': {
    status: 'not offered',
    note: 'no public links to a message',
    probe: [(r) => r.emails.share('em_x'), NF],
  },
  'emails.metrics': {
    status: 'not offered',
    note: '`GET /metrics` has the daily counters',
    probe: [(r) => r.emails.metrics(), NF],
  },
  'emails.attachments.get': {
    status: 'not offered',
    note: "a sent message's attachments are in `GET /emails/{id}/raw`",
    probe: [(r) => r.emails.attachments.get({ emailId: 'em_x', id: 'att_x' }), NF],
  },
  'emails.attachments.list': {
    status: 'not offered',
    note: 'as emails.attachments.get',
    probe: [(r) => r.emails.attachments.list({ emailId: 'em_x' }), NF],
  },
  'emails.receiving.get': {
    status: 'differs',
    note: 'Tern\'s received-message object (`object: "inbound"`, docs/inbound.md), attachments listed',
  },
  'emails.receiving.list': { status: 'differs', note: 'as emails.receiving.get, without attachments' },
  'emails.receiving.forward': {
    status: 'not offered',
    note: "inbound routes forward mail (a domain's `inbound.routes`)",
    probe: [
      (r) => r.emails.receiving.forward({ emailId: 'in_x', from: 'a@acme.test', to: 'b@example.com' } as never),
      NF,
    ],
  },
  'emails.receiving.attachments.get': {
    status: 'works',
    note: '`download_url` answers the bytes to an ADMIN key',
  },
  'emails.receiving.attachments.list': { status: 'works', note: 'as emails.receiving.attachments.get' },

  'events.send': { status: 'works', note: 'starts the automations the event triggers' },
  'events.create': {
    status: 'not offered',
    note: "Tern's `POST /events` records an event of a contact (events.send); events need no declaration",
    probe: [(r) => r.events.create({ name: 'signup' } as never), 'validation_error'],
  },
  'events.get': {
    status: 'not offered',
    note: 'as events.create',
    probe: [(r) => r.events.get('signup'), NF],
  },
  'events.list': {
    status: 'not offered',
    note: 'as events.create',
    probe: [(r) => r.events.list(), 'method_not_allowed'],
  },
  'events.update': {
    status: 'not offered',
    note: 'as events.create',
    probe: [(r) => r.events.update('signup', {} as never), NF],
  },
  'events.remove': { status: 'not offered', note: 'as events.create', probe: [(r) => r.events.remove('signup'), NF] },

  'logs.list': { status: 'differs', note: "Tern's log lines (logs.md): FULL keys, of the key's mode" },
  'logs.get': { status: 'differs', note: 'as logs.list, with the bodies, secrets removed' },

  'segments.create': {
    status: 'works',
    note: 'without a `filter` the segment is static: it holds the contacts added to it (contacts.segments.add)',
  },
  'segments.list': { status: 'works' },
  'segments.get': { status: 'works' },
  'segments.update': { status: 'works' },
  'segments.remove': { status: 'works' },

  'suppressions.add': { status: 'works' },
  'suppressions.list': { status: 'works' },
  'suppressions.get': { status: 'works', note: 'by id or address' },
  'suppressions.remove': { status: 'works', note: 'by id or address' },
  'suppressions.batch.add': {
    status: 'not offered',
    note: 'a CSV to `POST /suppressions/imports` adds many',
    probe: [(r) => r.suppressions.batch.add({ emails: ['a@example.com'] }), NF],
  },
  'suppressions.batch.remove': {
    status: 'not offered',
    note: 'as suppressions.batch.add',
    probe: [(r) => r.suppressions.batch.remove({ emails: ['a@example.com'] }), NF],
  },

  'templates.create': { status: 'works' },
  'templates.get': { status: 'works' },
  'templates.list': { status: 'works' },
  'templates.update': { status: 'works' },
  'templates.publish': { status: 'works' },
  'templates.remove': { status: 'works' },
  'templates.duplicate': { status: 'works', note: 'the copy holds the draft and is unpublished' },

  'topics.create': { status: 'works' },
  'topics.list': { status: 'works' },
  'topics.get': { status: 'works' },
  'topics.update': { status: 'works' },
  'topics.remove': { status: 'works' },

  'webhooks.create': { status: 'works', note: '`endpoint` is `url`; the answer carries both' },
  'webhooks.get': { status: 'works' },
  'webhooks.list': { status: 'works' },
  'webhooks.update': { status: 'works' },
  'webhooks.remove': { status: 'works' },
  'webhooks.rotateSigningSecret': {
    status: 'works',
    note: 'the old secret keeps signing for 24 hours (`POST /webhooks/{id}/rotate-secret` sets how long)',
  },
  'webhooks.verify': {
    status: 'works',
    note: 'each delivery carries the Standard Webhooks headers beside `tern-signature` (webhooks.md)',
  },
  'webhooks.events.list': {
    status: 'not offered',
    note: "a webhook's deliveries are `GET /webhooks/{id}/deliveries`",
    probe: [(r) => r.webhooks.events.list({ webhookId: 'wh_x' } as never), NF],
  },
  'webhooks.events.get': {
    status: 'not offered',
    note: 'as webhooks.events.list',
    probe: [(r) => r.webhooks.events.get({ webhookId: 'wh_x', eventId: 'x' } as never), NF],
  },
  'webhooks.events.replay': {
    status: 'not offered',
    note: '`POST /webhooks/{id}/deliveries/{delivery_id}/retry` sends one again',
    probe: [(r) => r.webhooks.events.replay({ webhookId: 'wh_x', eventId: 'x' } as never), NF],
  },
  'webhooks.events.attempts.list': {
    status: 'not offered',
    note: 'as webhooks.events.list',
    probe: [(r) => r.webhooks.events.attempts.list({ webhookId: 'wh_x', eventId: 'x' } as never), NF],
  },

  'usage.get': { status: 'not offered', note: '`GET /metrics` has the counters', probe: [(r) => r.usage.get(), NF] },
  'oauthGrants.list': {
    status: 'not offered',
    note: 'Tern has API keys, no OAuth',
    probe: [(r) => r.oauthGrants.list(), NF],
  },
  'oauthGrants.revoke': {
    status: 'not offered',
    note: 'as oauthGrants.list',
    probe: [(r) => r.oauthGrants.revoke('x'), NF],
  },
  ...inboxRows(),
};

/** Resend's agent inboxes: Tern receives mail on reply.<domain> and through inbound routes. */
function inboxRows(): Record<string, Row> {
  const note = "Tern's inbound mail is `emails.receiving` and the `email.received` webhook";
  const calls: Record<string, (r: Resend) => Promise<unknown>> = {
    'inboxes.create': (r) => r.inboxes.create({ name: 'x' } as never),
    'inboxes.list': (r) => r.inboxes.list(),
    'inboxes.get': (r) => r.inboxes.get('ib_x'),
    'inboxes.update': (r) => r.inboxes.update('ib_x', {} as never),
    'inboxes.remove': (r) => r.inboxes.remove('ib_x'),
    'inboxes.threads.list': (r) => r.inboxes.threads.list({ inboxId: 'ib_x' } as never),
    'inboxes.threads.search': (r) => r.inboxes.threads.search({ inboxId: 'ib_x', query: 'x' } as never),
    'inboxes.threads.get': (r) => r.inboxes.threads.get({ inboxId: 'ib_x', threadId: 't' } as never),
    'inboxes.threads.update': (r) => r.inboxes.threads.update({ inboxId: 'ib_x', threadId: 't' } as never),
    'inboxes.threads.remove': (r) => r.inboxes.threads.remove({ inboxId: 'ib_x', threadId: 't' } as never),
    'inboxes.threads.emails.list': (r) => r.inboxes.threads.emails.list({ inboxId: 'ib_x', threadId: 't' } as never),
    'inboxes.threads.emails.get': (r) =>
      r.inboxes.threads.emails.get({ inboxId: 'ib_x', threadId: 't', emailId: 'e' } as never),
    'inboxes.threads.emails.reply': (r) =>
      r.inboxes.threads.emails.reply({ inboxId: 'ib_x', threadId: 't', emailId: 'e', text: 'x' } as never),
    'inboxes.threads.emails.forward': (r) =>
      r.inboxes.threads.emails.forward({ inboxId: 'ib_x', threadId: 't', emailId: 'e', to: 'a@b.c' } as never),
    'inboxes.threads.labels.add': (r) =>
      r.inboxes.threads.labels.add({ inboxId: 'ib_x', threadId: 't', labels: ['l'] } as never),
    'inboxes.threads.labels.set': (r) =>
      r.inboxes.threads.labels.set({ inboxId: 'ib_x', threadId: 't', labels: ['l'] } as never),
    'inboxes.threads.labels.remove': (r) =>
      r.inboxes.threads.labels.remove({ inboxId: 'ib_x', threadId: 't', labelId: 'l' } as never),
    'inboxes.labels.list': (r) => r.inboxes.labels.list({ inboxId: 'ib_x' } as never),
    'inboxes.labels.create': (r) => r.inboxes.labels.create({ inboxId: 'ib_x', name: 'l' } as never),
    'inboxes.labels.update': (r) => r.inboxes.labels.update({ inboxId: 'ib_x', labelId: 'l', name: 'm' } as never),
    'inboxes.labels.remove': (r) => r.inboxes.labels.remove({ inboxId: 'ib_x', labelId: 'l' } as never),
    'inboxes.drafts.list': (r) => r.inboxes.drafts.list({ inboxId: 'ib_x' } as never),
    'inboxes.drafts.create': (r) => r.inboxes.drafts.create({ inboxId: 'ib_x' } as never),
    'inboxes.drafts.get': (r) => r.inboxes.drafts.get({ inboxId: 'ib_x', draftId: 'd' } as never),
    'inboxes.drafts.update': (r) => r.inboxes.drafts.update({ inboxId: 'ib_x', draftId: 'd' } as never),
    'inboxes.drafts.remove': (r) => r.inboxes.drafts.remove({ inboxId: 'ib_x', draftId: 'd' } as never),
    'inboxes.drafts.send': (r) => r.inboxes.drafts.send({ inboxId: 'ib_x', draftId: 'd' } as never),
    'inboxes.agent.get': (r) => r.inboxes.agent.get({ inboxId: 'ib_x' } as never),
    'inboxes.agent.update': (r) => r.inboxes.agent.update({ inboxId: 'ib_x' } as never),
  };
  return Object.fromEntries(
    Object.entries(calls).map(([name, call]) => [name, { status: 'not offered', note, probe: [call, NF] }]),
  );
}

/** Methods that make no request of their own (the SDK's private helpers). */
const HELPERS = new Set([
  'contacts.imports.buildCreateFormData',
  'contacts.imports.buildColumnMap',
  'contacts.imports.appendField',
  'templates.performCreate',
  'emails.receiving.forwardPassthrough',
  'emails.receiving.forwardWrapped',
  'emails.receiving.downloadRaw',
]);

/** Every method of every resource of an SDK client, as `resource.sub.method`. */
function sdkMethods(client: object): string[] {
  const out: string[] = [];
  const walk = (obj: Record<string, unknown>, prefix: string) => {
    for (const [key, value] of Object.entries(obj)) {
      if (!value || typeof value !== 'object' || key === 'resend' || key === 'headers') continue;
      const proto = Object.getPrototypeOf(value) as object;
      if (proto === Object.prototype) continue;
      for (const m of Object.getOwnPropertyNames(proto)) {
        if (m !== 'constructor' && typeof (value as Record<string, unknown>)[m] === 'function') {
          out.push(`${prefix}${key}.${m}`);
        }
      }
      walk(value as Record<string, unknown>, `${prefix}${key}.`);
    }
  };
  walk(client as Record<string, unknown>, '');
  return out.filter((m) => !HELPERS.has(m));
}

/** The docs' table, rendered from TABLE in the SDK's resource order. */
function renderTable(order: string[]): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  const lines = [`Checked against \`resend\` ${SDK_VERSION}.`, '', '| SDK method | In Tern | Notes |', '|---|---|---|'];
  for (const m of order) {
    const row = TABLE[m]!;
    lines.push(`| \`${m}\` | ${row.status} | ${cell(row.note ?? '')} |`);
  }
  return lines.join('\n');
}

const SDK_VERSION = (
  JSON.parse(readFileSync(new URL('../../node_modules/resend/package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;
const DOC = new URL('../../docs/api/resend.md', import.meta.url);
const BEGIN = '<!-- sdk-table: written from test/int/resend-sdk.int.test.ts -->';
const END = '<!-- /sdk-table -->';

/** The key's default rate: a request every 100 ms keeps under 10/s whatever the burst holds. */
const PACE_MS = 100;

/**
 * An SDK client whose calls are paced and recorded: `called` gets each method that answered
 * without an error, `failed` each that answered one (with its code).
 */
function tracked(token: string, baseUrl: string, called: Set<string>, failed: Map<string, string>): Resend {
  const client = new Resend(token, { baseUrl });
  let next = 0;
  const pace = async () => {
    const now = Date.now();
    const at = Math.max(now, next);
    next = at + PACE_MS;
    if (at > now) await new Promise((r) => setTimeout(r, at - now));
  };
  const wrap = (target: object, prefix: string): object =>
    new Proxy(target, {
      get(obj, prop, receiver) {
        const value = Reflect.get(obj, prop, receiver) as unknown;
        if (typeof prop !== 'string') return value;
        const name = `${prefix}${prop}`;
        if (typeof value === 'function' && prefix !== '') {
          return (...args: unknown[]) => {
            if (name === 'webhooks.verify') {
              const out = (value as (...a: unknown[]) => unknown).apply(obj, args);
              called.add(name);
              return out;
            }
            return pace().then(async () => {
              const res = (await (value as (...a: unknown[]) => Promise<unknown>).apply(obj, args)) as {
                error: { error?: { code?: string }; name?: string } | null;
              };
              if (res.error === null) called.add(name);
              else failed.set(name, res.error.error?.code ?? res.error.name ?? 'unknown');
              return res;
            });
          };
        }
        if (value && typeof value === 'object' && prop !== 'headers') return wrap(value, `${name}.`);
        return value;
      },
    });
  return wrap(client, '') as Resend;
}

describe('Resend SDK compatibility (docs/api/resend.md)', function () {
  let api: TestApi;
  let org: SeededOrg;
  let resend: Resend;
  const called = new Set<string>();
  const failed = new Map<string, string>();

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    resend = tracked(org.key.token, `${api.url}/api/v1`, called, failed);
  });
  after(async () => api.close());

  it('has a row for every method of the SDK, and none for a method it lacks', () => {
    const methods = sdkMethods(new Resend('re_x'));
    expect(
      methods.filter((m) => !TABLE[m]),
      'methods without a row',
    ).to.deep.equal([]);
    expect(
      Object.keys(TABLE).filter((m) => !methods.includes(m)),
      'rows without a method',
    ).to.deep.equal([]);
  });

  it('docs/api/resend.md shows the table', () => {
    const table = renderTable(sdkMethods(new Resend('re_x')));
    const doc = readFileSync(DOC, 'utf8');
    const start = doc.indexOf(BEGIN);
    const end = doc.indexOf(END);
    expect(start, `${BEGIN} in docs/api/resend.md`).to.be.greaterThan(-1);
    const current = doc.slice(start + BEGIN.length, end).trim();
    if (process.env.TERN_WRITE_DOCS === '1' && current !== table) {
      writeFileSync(DOC, `${doc.slice(0, start + BEGIN.length)}\n${table}\n${doc.slice(end)}`);
      return;
    }
    expect(current, 'the table in docs/api/resend.md (TERN_WRITE_DOCS=1 rewrites it)').to.equal(table);
  });

  it('answers each method not offered with the error its row names', async () => {
    const wrong: string[] = [];
    for (const [name, row] of Object.entries(TABLE)) {
      if (row.status !== 'not offered' || !row.probe) continue;
      const [call, code] = row.probe;
      await Promise.resolve(call(resend)).catch((err: Error) => expect.fail(`${name}: ${err.message}`));
      if (failed.get(name) !== code) wrong.push(`${name}: ${failed.get(name) ?? 'succeeded'}, not ${code}`);
    }
    expect(wrong).to.deep.equal([]);
  });

  // The flows below call every `works` and `differs` method; the last test checks they all did.
  const ok = <T extends { error: unknown; data: unknown }>(res: T): NonNullable<T['data']> => {
    expect(res.error).to.equal(null);
    return res.data as NonNullable<T['data']>;
  };

  it('emails: send, create, get, list, update, cancel; batch.send, batch.create', async () => {
    const sent = ok(
      await resend.emails.send({
        from: 'Acme <hello@acme.test>',
        to: ['delivered@example.com'],
        cc: 'cc@example.com',
        replyTo: 'support@acme.test',
        subject: 'Hello from the SDK',
        html: '<p>Hi</p>',
        text: 'Hi',
        tags: [{ name: 'source', value: 'sdk' }],
        headers: { 'X-Entity-Ref-ID': '123' },
        attachments: [{ filename: 'a.txt', content: Buffer.from('hello') }],
        scheduledAt: new Date(Date.now() + 3600_000).toISOString(),
      }),
    );
    const id = sent.id;
    const [att] = await api.deps.sql`select content from email_attachments where email_id = ${id}`;
    expect(att!.content.toString()).to.equal('hello');
    const got = ok(await resend.emails.get(id));
    expect(got).to.include({ object: 'email', id, subject: 'Hello from the SDK', last_event: 'scheduled' });
    expect(got.to).to.deep.equal(['delivered@example.com']);
    expect(ok(await resend.emails.list({ limit: 10 })).data.map((e) => e.id)).to.include(id);
    const at = new Date(Date.now() + 7200_000).toISOString();
    expect(ok(await resend.emails.update({ id, scheduledAt: at }))).to.deep.equal({ object: 'email', id });
    expect(ok(await resend.emails.cancel(id))).to.deep.equal({ object: 'email', id });
    const [gone] = await api.deps.sql`select status from emails where id = ${id}`;
    expect(gone!.status).to.equal('canceled');
    ok(await resend.emails.create({ from: 'hello@acme.test', to: 'b@example.com', subject: 's', text: 't' }));

    const items = [1, 2, 3].map((i) => ({
      from: 'hello@acme.test',
      to: `u${i}@example.com`,
      subject: `n${i}`,
      html: '<p>x</p>',
    }));
    const ids = ok(await resend.batch.send(items, { idempotencyKey: 'sdk-batch-1' })).data.map((d) => d.id);
    expect(ids).to.have.length(3);
    const replay = ok(await resend.batch.create(items, { idempotencyKey: 'sdk-batch-1' }));
    expect(replay.data.map((d) => d.id)).to.deep.equal(ids);
  });

  it("hands Tern's error body over as `error`: SDK users read error.error.message", async () => {
    const res = await resend.emails.send({ from: 'x@unknown.test', to: 'a@example.com', subject: 's', html: 'h' });
    expect(res.data).to.equal(null);
    expect(res.error).to.deep.equal({
      error: {
        code: 'validation_error',
        message: 'body.from: domain unknown.test is not a domain of this organization',
      },
    });
  });

  it('domains: create, list, get, update, verify, remove', async () => {
    const created = ok(
      await resend.domains.create({ name: 'sdk-domain.test', region: 'eu-west-1', tls: 'opportunistic' }),
    );
    const id = created.id;
    expect(created.name).to.equal('sdk-domain.test');
    expect(ok(await resend.domains.list()).data.map((d) => d.id)).to.include(id);
    expect(ok(await resend.domains.get(id))).to.include({ id, name: 'sdk-domain.test' });
    ok(await resend.domains.update({ id, openTracking: true, clickTracking: false, tls: 'opportunistic' }));
    const enforced = await resend.domains.update({ id, tls: 'enforced' });
    expect(enforced.error).to.deep.equal({
      error: { code: 'validation_error', message: 'body.tls must be one of opportunistic' },
    });
    const [row] = await api.deps.sql`select track_opens, track_clicks from domains where id = ${id}`;
    expect(row).to.deep.equal({ track_opens: true, track_clicks: false });
    ok(await resend.domains.verify(id));
    ok(await resend.domains.remove(id));
  });

  it('templates: create, get, list, update, publish, remove', async () => {
    const created = ok(
      await resend.templates.create({
        name: 'Welcome',
        subject: 'Hi {{{NAME}}}',
        html: '<p>Hello {{{NAME}}}</p>',
        variables: [{ key: 'NAME', type: 'string', fallbackValue: 'there' }],
      }),
    );
    const id = created.id;
    expect(ok(await resend.templates.get(id))).to.include({ id, name: 'Welcome' });
    expect(ok(await resend.templates.list()).data.map((t) => t.id)).to.include(id);
    ok(await resend.templates.update(id, { subject: 'Hello {{{NAME}}}' }));
    ok(await resend.templates.publish(id));
    const sent = ok(
      await resend.emails.send({
        from: 'hello@acme.test',
        to: 'tpl@example.com',
        template: { id, variables: { NAME: 'Ann' } },
      } as never),
    );
    const [msg] = await api.deps.sql`select subject from emails where id = ${sent.id}`;
    expect(msg!.subject).to.equal('Hello Ann');
    const copy = ok(await resend.templates.duplicate(id));
    expect(ok(await resend.templates.get(copy.id))).to.include({
      name: 'Welcome (copy)',
      subject: 'Hello {{{NAME}}}',
      html: '<p>Hello {{{NAME}}}</p>',
    });
    ok(await resend.templates.remove(id));
  });

  it('topics and segments: create, list, get, update, remove', async () => {
    const topic = ok(await resend.topics.create({ name: 'SDK', defaultSubscription: 'opt_in' })).id;
    ok(await resend.topics.update({ id: topic, name: 'SDK 2' }));
    expect(ok(await resend.topics.get(topic))).to.deep.include({ name: 'SDK 2', default_subscription: 'opt_in' });
    expect(ok(await resend.topics.list()).data.map((t) => t.id)).to.include(topic);
    const seg = ok(await resend.segments.create({ name: 'Everyone' })).id;
    expect(ok(await resend.segments.get(seg))).to.deep.include({ name: 'Everyone' });
    ok(await resend.segments.update(seg, { name: 'All' } as never));
    expect(ok(await resend.segments.list()).data.map((s) => s.id)).to.include(seg);
    ok(await resend.segments.remove(seg));
    ok(await resend.topics.remove(topic));
    // `resend.audiences` is `resend.segments` in the SDK: the same requests under the old name.
    const aud = ok(await resend.audiences.create({ name: 'Old name' })).id;
    expect(ok(await resend.audiences.get(aud))).to.deep.include({ name: 'Old name' });
    ok(await resend.audiences.update(aud, { name: 'Older' } as never));
    expect(ok(await resend.audiences.list()).data.map((s) => s.id)).to.include(aud);
    ok(await resend.audiences.remove(aud));
  });

  it('contacts: create, get, list, update, remove; topics; imports', async () => {
    const topic = ok(await resend.topics.create({ name: 'News', defaultSubscription: 'opt_out' })).id;
    const id = ok(await resend.contacts.create({ email: 'sdk@example.test', firstName: 'Sdk' })).id;
    expect(ok(await resend.contacts.get({ email: 'sdk@example.test' }))).to.include({ id, first_name: 'Sdk' });
    expect(ok(await resend.contacts.list({ limit: 100 })).data.map((c) => c.id)).to.include(id);
    ok(await resend.contacts.update({ id, lastName: 'Kit' }));
    ok(await resend.contacts.topics.update({ id, topics: [{ id: topic, subscription: 'opt_in' }] }));
    const topics = ok(await resend.contacts.topics.list({ id }));
    expect(topics.data.map((t) => [t.id, t.subscription])).to.deep.include([topic, 'opt_in']);
    ok(await resend.contacts.remove({ email: 'sdk@example.test' }));

    const imported = ok(
      await resend.contacts.imports.create({
        file: new Blob(['email,first\nimp@example.test,Imp\n'], { type: 'text/csv' }),
        columnMap: { email: 'email', firstName: 'first' },
      } as never),
    );
    expect(ok(await resend.contacts.imports.get(imported.id))).to.include({ id: imported.id });
    expect(ok(await resend.contacts.imports.list()).data.map((i) => i.id)).to.include(imported.id);
  });

  it('contacts.segments: add, list, remove; a static segment holds the contacts added to it', async () => {
    const ann = ok(await resend.contacts.create({ email: 'ann@seg.test' })).id;
    ok(await resend.contacts.create({ email: 'bob@seg.test' }));
    const vip = ok(await resend.segments.create({ name: 'VIP' })).id;
    const everyone = (
      await api.request('POST', '/segments', {
        token: org.key.token,
        body: { name: 'Seg domain', filter: { field: 'email', op: 'ends_with', value: '@seg.test' } },
      })
    ).json.id as string;
    const members = async (id: string) =>
      (
        (await api.request('GET', `/segments/${id}/contacts`, { token: org.key.token })).json.data as {
          email: string;
        }[]
      )
        .map((c) => c.email)
        .sort();
    expect(await members(vip)).to.deep.equal([]);
    ok(await resend.contacts.segments.add({ contactId: ann, segmentId: vip }));
    expect(await members(vip)).to.deep.equal(['ann@seg.test']);
    const held = ok(await resend.contacts.segments.list({ email: 'ann@seg.test' }));
    expect(held.data.map((x) => x.id).sort()).to.deep.equal([vip, everyone].sort());
    ok(await resend.contacts.segments.remove({ email: 'ann@seg.test', segmentId: everyone }));
    expect(await members(everyone)).to.deep.equal(['bob@seg.test']);
    ok(await resend.contacts.segments.remove({ contactId: ann, segmentId: vip }));
    expect(ok(await resend.contacts.segments.list({ contactId: ann })).data).to.deep.equal([]);
  });

  it('broadcasts: create, get, list, update, send, cancel, remove', async () => {
    ok(await resend.contacts.create({ email: 'reader@example.test' }));
    const segmentId = ok(await resend.segments.create({ name: 'Readers' })).id;
    const draft = ok(
      await resend.broadcasts.create({
        name: 'Launch',
        from: 'News <news@acme.test>',
        subject: 'We launched',
        html: '<p>Hello</p>',
        segmentId,
      }),
    ).id;
    expect(ok(await resend.broadcasts.get(draft))).to.include({ id: draft, status: 'draft' });
    ok(await resend.broadcasts.update(draft, { subject: 'We launched!' }));
    expect(ok(await resend.broadcasts.list()).data.map((b) => b.id)).to.include(draft);
    ok(await resend.broadcasts.remove(draft));

    const later = ok(
      await resend.broadcasts.create({
        from: 'news@acme.test',
        subject: 'Later',
        html: '<p>Later</p>',
        segmentId,
      }),
    ).id;
    ok(await resend.broadcasts.send(later, { scheduledAt: 'in 1 hour' }));
    ok(await resend.broadcasts.cancel(later));
    expect(ok(await resend.broadcasts.get(later)).status).to.equal('canceled');
  });

  it('suppressions: add, list, get, remove', async () => {
    const added = ok(await resend.suppressions.add({ email: 'gone@example.test' } as never));
    expect(ok(await resend.suppressions.list()).data.map((s) => s.id)).to.include(added.id);
    expect(ok(await resend.suppressions.get('gone@example.test'))).to.include({ id: added.id });
    ok(await resend.suppressions.remove('gone@example.test'));
  });

  it('webhooks: create, get, list, update, rotateSigningSecret, remove', async () => {
    const created = ok(
      await resend.webhooks.create({ endpoint: 'https://hooks.example.com/sdk', events: ['email.sent'] }),
    );
    const id = created.id;
    expect(created.signing_secret).to.be.a('string');
    expect(ok(await resend.webhooks.get(id))).to.include({ id, endpoint: 'https://hooks.example.com/sdk' });
    expect(ok(await resend.webhooks.list()).data.map((w) => w.id)).to.include(id);
    ok(await resend.webhooks.update(id, { endpoint: 'https://hooks.example.com/sdk2', events: ['email.delivered'] }));
    const [row] = await api.deps.sql`select url, events from webhooks where id = ${id}`;
    expect(row).to.deep.equal({ url: 'https://hooks.example.com/sdk2', events: ['email.delivered'] });
    const rotated = ok(await resend.webhooks.rotateSigningSecret(id)) as unknown as { signing_secret: string };
    expect(rotated.signing_secret).to.not.equal(created.signing_secret);
    // What a delivery carries (test/int/webhooks-delivery.int.test.ts checks real deliveries).
    const body = JSON.stringify({ type: 'email.sent', created_at: new Date().toISOString(), data: {} });
    const h = standardWebhookHeaders('dlv_sdk', Math.floor(Date.now() / 1000), body, [rotated.signing_secret]);
    const verified = resend.webhooks.verify({
      payload: body,
      headers: { id: h['webhook-id'], timestamp: h['webhook-timestamp'], signature: h['webhook-signature'] },
      webhookSecret: rotated.signing_secret,
    });
    expect(verified).to.deep.equal(JSON.parse(body));
    ok(await resend.webhooks.remove(id));
  });

  it('emails.receiving: list, get; attachments.list, attachments.get', async () => {
    const domain = org.domains['acme.test']!;
    const raw = Buffer.from('From: pat@example.net\r\nTo: help@acme.test\r\nSubject: Hi\r\n\r\nHello\r\n');
    const id = await insertInbound(api.deps.sql, {
      orgId: org.organization.id,
      domainId: domain.id,
      source: 'mx',
      mailFrom: 'pat@example.net',
      rcptTo: ['help@acme.test'],
      remoteAddress: '127.0.0.1',
      raw,
    });
    const attachment = { id: newId('att'), filename: 'log.txt', contentType: 'text/plain', contentId: null };
    await saveParsedInbound(api.deps.sql, id, {
      orgId: org.organization.id,
      domainId: domain.id,
      kind: 'reply',
      fromAddress: 'pat@example.net',
      to: ['help@acme.test'],
      cc: [],
      subject: 'Hi',
      text: 'Hello',
      html: null,
      headers: [{ key: 'subject', value: 'Hi' }],
      messageId: null,
      inReplyTo: null,
      emailId: null,
      autoReply: false,
      attachments: [{ ...attachment, content: Buffer.from('line 1\n') }],
    });
    expect(ok(await resend.emails.receiving.list()).data.map((m) => m.id)).to.include(id);
    const got = ok(await resend.emails.receiving.get(id)) as unknown as { subject: string; attachments: unknown[] };
    expect(got.subject).to.equal('Hi');
    expect(got.attachments).to.have.length(1);
    const base = api.deps.config.baseUrl.replace(/\/+$/, '');
    const expected = {
      object: 'attachment',
      id: attachment.id,
      filename: 'log.txt',
      content_type: 'text/plain',
      content_id: null,
      size: 7,
      download_url: `${base}/api/v1/inbound/${id}/attachments/${attachment.id}`,
    };
    expect(ok(await resend.emails.receiving.attachments.list({ emailId: id })).data).to.deep.equal([expected]);
    const one = ok(await resend.emails.receiving.attachments.get({ emailId: id, id: attachment.id }));
    expect(one).to.deep.equal(expected);
    const bytes = await fetch(expected.download_url.replace(base, api.url), {
      headers: { authorization: `Bearer ${org.key.token}` },
    });
    expect(await bytes.text()).to.equal('line 1\n');
  });

  it('logs: list, get', async () => {
    const lines = await waitFor('request log lines', async () => {
      const res = ok(await resend.logs.list());
      return res.data.length > 0 ? res.data : null;
    });
    const line = lines[0] as unknown as { id: string; path: string };
    expect(line.path).to.match(/^\/api\/v1\//);
    expect(ok(await resend.logs.get(line.id))).to.include({ id: line.id });
  });

  it("apiKeys: create with Resend's permission names and domain_id, list, remove", async () => {
    const domainId = org.domains['acme.test']!.id;
    const sending = ok(await resend.apiKeys.create({ name: 'CI', permission: 'sending_access', domain_id: domainId }));
    expect(sending.token).to.match(/^tern_live_/);
    const full = ok(await resend.apiKeys.create({ name: 'Ops' }));
    const rows = await api.deps
      .sql`select id, permission, domain_ids from api_keys where id in ${api.deps.sql([sending.id, full.id])}`;
    expect(Object.fromEntries(rows.map((r) => [r.id, [r.permission, r.domain_ids]]))).to.deep.equal({
      [sending.id]: ['SEND', [domainId]],
      [full.id]: ['FULL', []],
    });
    expect(ok(await resend.apiKeys.list()).data.map((k) => k.id)).to.include.members([sending.id, full.id]);
    ok(await resend.apiKeys.remove(sending.id));
    const me = await api.request('GET', '/keys/me', { token: sending.token });
    expect(me.status).to.equal(401);
  });

  it('automations: list, get, remove; runs.list, runs.get; events.send', async () => {
    const tpl = await api.request('POST', '/templates', {
      token: org.key.token,
      body: { name: 'Drip', subject: 'Drip', html: '<p>x</p>' },
    });
    await api.request('POST', `/templates/${tpl.json.id}/publish`, { token: org.key.token });
    const created = await api.request('POST', '/automations', {
      token: org.key.token,
      body: {
        name: 'Drip',
        trigger: { event: 'signed_up' },
        steps: [{ wait: '2d' }, { send: { template: tpl.json.id, from: 'hello@acme.test' } }],
      },
    });
    expect(created.status, created.text).to.equal(201);
    const id = created.json.id as string;
    const contact = ok(await resend.contacts.create({ email: 'drip@example.test' })).id;
    // A run as the automation worker starts one (no worker runs here).
    const [run] = await insertRuns(api.deps.sql, [
      {
        automation_id: id,
        org_id: org.organization.id,
        contact_id: contact,
        occurrence: 'sdk',
        mode: 'live',
        steps: created.json.steps as never,
        context: {} as never,
      },
    ]);
    const sent = ok(
      await resend.events.send({ event: 'signed_up', email: 'drip@example.test', payload: { plan: 'pro' } }),
    );
    const [stored] = await api.deps
      .sql`select name, contact_id, properties from contact_events where id = ${(sent as unknown as { id: string }).id}`;
    expect(stored).to.deep.equal({ name: 'signed_up', contact_id: contact, properties: { plan: 'pro' } });
    expect(sent).to.include({ object: 'event', event: 'signed_up' });
    expect(ok(await resend.automations.list()).data.map((a) => a.id)).to.include(id);
    expect(ok(await resend.automations.get(id))).to.include({ id });
    const runs = ok(await resend.automations.runs.list({ automationId: id }));
    expect(runs.data.map((r: { id: string }) => r.id)).to.deep.equal([run]);
    expect(ok(await resend.automations.runs.get({ automationId: id, runId: run! }))).to.include({ id: run });
    ok(await resend.automations.remove(id));
  });

  it('called every method it says works, and each succeeded', () => {
    const expected = Object.entries(TABLE)
      .filter(([, row]) => row.status !== 'not offered')
      .map(([name]) => name);
    const missing = expected.filter((m) => !called.has(m));
    expect(
      missing.map((m) => `${m}${failed.has(m) ? ` (${failed.get(m)})` : ' (not called)'}`),
      'methods marked works/differs that did not succeed',
    ).to.deep.equal([]);
  });
});
