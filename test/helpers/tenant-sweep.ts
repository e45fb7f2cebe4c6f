// How the cross-tenant sweep (test/int/tenant-sweep.int.test.ts) calls each row of the
// permission table: the requests aimed at a victim's resources (`v`), made with the keys of a
// caller whose own resources are `o`. Every row of shared/permissions.ts needs an entry; the test
// fails on a row without one.
import type { ResourceSet } from './tenant-world.js';

/**
 * What a caller allowed past the auth layer must get:
 * - `not_found`: the path names the victim's resource: 404 not_found (a domain-restricted key
 *   of the victim's own organization may get 403 forbidden_domain instead);
 * - `refused`: the body or query names the victim's resource: a 4xx, never a 2xx;
 * - `own`: the request acts on the caller's own organization: any answer but a 5xx.
 * In every case the answer shows nothing of the victim and the victim's rows stay as they were.
 */
export type Expect = 'not_found' | 'refused' | 'own';

export interface SweepCall {
  path: string;
  body?: unknown;
  expect: Expect;
  /**
   * Aims at a resource tied to the victim's domain (tenant-world.ts DOMAIN_BOUND): also made with
   * keys of the victim's organization restricted to another domain. Calls aimed at org-wide
   * resources (templates, contacts, topics…) are not: those keys may use them (SPEC).
   */
  bound?: boolean;
  /** A CSV body sent as `text/csv` instead of `body` (the import routes). */
  csv?: string;
}

type Entry = (v: ResourceSet, o: ResourceSet) => SweepCall[];

const own = (path: string, body?: unknown): SweepCall => ({ path, body, expect: 'own' });
const nf = (path: string, body?: unknown, bound = false): SweepCall => ({ path, body, expect: 'not_found', bound });
const nfBound = (path: string, body?: unknown): SweepCall => nf(path, body, true);
const refused = (path: string, body?: unknown, bound = false): SweepCall => ({ path, body, expect: 'refused', bound });
const csv = (expect: Expect, path: string, text: string, bound = false): SweepCall => ({
  path,
  csv: text,
  expect,
  bound,
});
const mapping = (m: unknown): string => `mapping=${encodeURIComponent(JSON.stringify(m))}`;

let unique = 0;
const fresh = (what: string): string => `${what}-${process.pid}-${++unique}`;
const inDays = (days: number): string => new Date(Date.now() + days * 86_400_000).toISOString();
const from = (s: ResourceSet): string => `Sweep <hello@${s.domainName}>`;
const enc = encodeURIComponent;

function email(o: ResourceSet, extra: Record<string, unknown> = {}) {
  return { from: from(o), to: 'ann@example.com', subject: 'Sweep', text: 'Hello', ...extra };
}

function broadcast(o: ResourceSet, extra: Record<string, unknown> = {}) {
  return { from: from(o), subject: 'Sweep', html: '<p>Hi</p>', segment_id: o.segment, ...extra };
}

const keys: Record<string, Entry> = {
  'GET /keys/me': () => [own('/keys/me')],
  'GET /keys': (v) => [own('/keys'), own(`/keys?after=${v.key}`)],
  'POST /keys': (v, o) => [
    own('/keys', { name: fresh('key'), permission: 'SEND', domains: [o.domainName] }),
    refused('/keys', { name: fresh('key'), permission: 'SEND', domains: [v.domainName] }, true),
    refused('/keys', { name: fresh('key'), permission: 'SEND', domains: [v.domain] }, true),
  ],
  // Resend's paths for the same routes (shared/permissions.ts ALIASES).
  'GET /api-keys': (v) => [own('/api-keys'), own(`/api-keys?after=${v.key}`)],
  'POST /api-keys': (v, o) => [
    own('/api-keys', { name: fresh('key'), permission: 'sending_access', domain_id: o.domain }),
    refused('/api-keys', { name: fresh('key'), permission: 'sending_access', domain_id: v.domain }, true),
    refused('/api-keys', { name: fresh('key'), permission: 'sending_access', domain_id: v.domainName }, true),
  ],
  'DELETE /api-keys/:id': (v) => [nfBound(`/api-keys/${v.key}`)],
  'GET /keys/:id': (v) => [nf(`/keys/${v.key}`)],
  'DELETE /keys/:id': (v) => [nfBound(`/keys/${v.key}`)],
  'POST /keys/:id/rotate': (v) => [nfBound(`/keys/${v.key}/rotate`, { expires_in: 0 })],
  'GET /organization': () => [own('/organization')],
  'PATCH /organization': () => [own('/organization', { name: fresh('org') })],
  'GET /audit-log': (v) => [
    own('/audit-log'),
    own(`/audit-log?actor=${v.key}`),
    own('/audit-log?action=key.minted'),
    own(`/audit-log?after=${v.key}`),
  ],
};

const domains: Record<string, Entry> = {
  'POST /domains': () => [own('/domains', { name: `${fresh('d')}.test` })],
  'GET /domains': (v) => [own('/domains'), own(`/domains?after=${v.domain}`)],
  'GET /domains/:id': (v) => [nfBound(`/domains/${v.domain}`), nfBound(`/domains/${v.domainName}`)],
  'PATCH /domains/:id': (v) => [
    nfBound(`/domains/${v.domain}`, { open_tracking: false }),
    nfBound(`/domains/${v.domainName}`, { click_tracking: false }),
  ],
  'DELETE /domains/:id': (v) => [nfBound(`/domains/${v.domain}`), nfBound(`/domains/${v.domainName}`)],
  'POST /domains/:id/verify': (v) => [nfBound(`/domains/${v.domain}/verify`, {})],
  'GET /domains/:id/dmarc': (v) => [nfBound(`/domains/${v.domain}/dmarc`), nfBound(`/domains/${v.domainName}/dmarc`)],
};

const emails: Record<string, Entry> = {
  'POST /emails': (v, o) => [
    own('/emails', email(o)),
    refused('/emails', email(o, { from: from(v) }), true),
    refused('/emails', { from: from(o), to: 'ann@example.com', template: { id: v.template } }),
    refused('/emails', { from: from(o), to: 'ann@example.com', template: { id: v.templateSlug } }),
    refused('/emails', email(o, { topic_id: v.topic })),
  ],
  'POST /emails/batch': (v, o) => [
    own('/emails/batch', [email(o)]),
    refused('/emails/batch', [email(o), email(o, { from: from(v) })], true),
    refused('/emails/batch', [{ from: from(o), to: 'ann@example.com', template: { id: v.template } }]),
    refused('/emails/batch', [email(o, { topic_id: v.topic })]),
  ],
  'GET /emails': (v) => [own('/emails'), own(`/emails?after=${v.email}`), own(`/emails?before=${v.email}`)],
  'GET /emails/:id': (v) => [nfBound(`/emails/${v.email}`)],
  'GET /emails/:id/events': (v) => [nfBound(`/emails/${v.email}/events`)],
  'GET /emails/:id/raw': (v) => [
    nfBound(`/emails/${v.email}/raw`),
    nfBound(`/emails/${v.email}/raw?recipient=ann@example.com`),
  ],
  'PATCH /emails/:id': (v) => [nfBound(`/emails/${v.email}`, { scheduled_at: inDays(2) })],
  'POST /emails/:id/cancel': (v) => [nfBound(`/emails/${v.email}/cancel`, {})],
};

const templates: Record<string, Entry> = {
  'POST /templates': () => [own('/templates', { name: fresh('tpl'), subject: 'Hi', html: '<p>Hi</p>' })],
  'GET /templates': (v) => [own('/templates'), own(`/templates?after=${v.template}`)],
  'GET /templates/:id': (v) => [nf(`/templates/${v.template}`), nf(`/templates/${v.templateSlug}`)],
  'PATCH /templates/:id': (v) => [
    nf(`/templates/${v.template}`, { subject: 'Changed' }),
    nf(`/templates/${v.templateSlug}`, { subject: 'Changed' }),
  ],
  'POST /templates/:id/publish': (v) => [nf(`/templates/${v.template}/publish`, {})],
  'POST /templates/:id/duplicate': (v) => [
    nf(`/templates/${v.template}/duplicate`),
    nf(`/templates/${v.templateSlug}/duplicate`),
  ],
  'DELETE /templates/:id': (v) => [nf(`/templates/${v.template}`), nf(`/templates/${v.templateSlug}`)],
};

const suppressions: Record<string, Entry> = {
  'POST /suppressions': (v, o) => [
    own('/suppressions', { email: `${fresh('s')}@example.com`, domain: o.domainName }),
    refused('/suppressions', { email: `${fresh('s')}@example.com`, domain: v.domainName }, true),
    refused('/suppressions', { email: `${fresh('s')}@example.com`, domain: v.domain }, true),
  ],
  'GET /suppressions': (v) => [
    own('/suppressions'),
    own(`/suppressions?email=${enc(v.suppressedEmail)}`),
    refused(`/suppressions?domain=${v.domainName}`, undefined, true),
  ],
  'GET /suppressions/:id': (v) => [
    nfBound(`/suppressions/${v.suppression}`),
    nfBound(`/suppressions/${enc(v.suppressedEmail)}`),
    nf(`/suppressions/${v.orgSuppression}`),
  ],
  'DELETE /suppressions/:id': (v) => [
    nfBound(`/suppressions/${v.suppression}`),
    nfBound(`/suppressions/${enc(v.suppressedEmail)}`),
    refused(`/suppressions/${enc(v.suppressedEmail)}?domain=${v.domainName}`, undefined, true),
    nf(`/suppressions/${v.orgSuppression}`),
  ],
};

const webhooks: Record<string, Entry> = {
  'POST /webhooks': () => [own('/webhooks', { url: `https://hooks.example.com/${fresh('wh')}` })],
  'GET /webhooks': (v) => [own('/webhooks'), own(`/webhooks?after=${v.webhook}`)],
  'GET /webhooks/:id': (v) => [nf(`/webhooks/${v.webhook}`)],
  'PATCH /webhooks/:id': (v) => [nf(`/webhooks/${v.webhook}`, { status: 'disabled', url: 'https://evil.example/' })],
  'DELETE /webhooks/:id': (v) => [nf(`/webhooks/${v.webhook}`)],
  'POST /webhooks/:id/rotate-secret': (v) => [nf(`/webhooks/${v.webhook}/rotate-secret`, { expires_in: 0 })],
  'POST /webhooks/:id/signing-secret/rotate': (v) => [nf(`/webhooks/${v.webhook}/signing-secret/rotate`)],
  'GET /webhooks/:id/deliveries': (v, o) => [
    nf(`/webhooks/${v.webhook}/deliveries`),
    own(`/webhooks/${o.webhook}/deliveries?after=${v.delivery}`),
  ],
  'POST /webhooks/:id/deliveries/:delivery_id/retry': (v, o) => [
    nf(`/webhooks/${v.webhook}/deliveries/${v.delivery}/retry`, {}),
    nf(`/webhooks/${o.webhook}/deliveries/${v.delivery}/retry`, {}),
    nf(`/webhooks/${v.webhook}/deliveries/${o.delivery}/retry`, {}),
  ],
  'POST /webhooks/:id/test': (v) => [nf(`/webhooks/${v.webhook}/test`, { type: 'email.sent' })],
};

const reads: Record<string, Entry> = {
  'GET /metrics': (v) => [
    own('/metrics'),
    own(`/metrics?facet=key&key=${v.key}`),
    own(`/metrics?facet=template&key=${v.template}`),
    refused(`/metrics?domain=${v.domainName}`, undefined, true),
    refused(`/metrics?domain=${v.domain}`, undefined, true),
  ],
  'GET /inbound': (v) => [own('/inbound'), own(`/inbound?after=${v.inbound}`)],
  'GET /inbound/:id': (v) => [nfBound(`/inbound/${v.inbound}`)],
  // The caller's own lines repeat the victim's ids it sent, and the victim's own reads add lines:
  // the sweep reads lines of requests that named no id and that no key of the sweep makes.
  'GET /logs': (v) => [
    own(`/logs?path=/api/v1/keys/me&key_id=${v.key}`),
    own(`/logs?path=/api/v1/keys/me&key_id=${v.key}&after=${v.requestLog}`),
  ],
  'GET /logs/:id': (v) => [nf(`/logs/${v.requestLog}`)],
  'GET /inbound/:id/attachments': (v) => [nfBound(`/inbound/${v.inbound}/attachments`)],
  'GET /emails/receiving': (v) => [own('/emails/receiving'), own(`/emails/receiving?after=${v.inbound}`)],
  'GET /emails/receiving/:id': (v) => [nfBound(`/emails/receiving/${v.inbound}`)],
  'GET /emails/receiving/:id/attachments': (v) => [nfBound(`/emails/receiving/${v.inbound}/attachments`)],
  'GET /emails/receiving/:id/attachments/:attachment_id': (v) => [
    nfBound(`/emails/receiving/${v.inbound}/attachments/att_00000000000000000000000000`),
  ],
  'GET /inbound/:id/attachments/:attachment_id': (v) => [
    nfBound(`/inbound/${v.inbound}/attachments/att_00000000000000000000000000`),
  ],
};

const choice = (topic: string) => [{ id: topic, subscription: 'opt_in' }];

/** The contact routes under /contacts and under Resend's /audiences/{id}/contacts. */
function contactRoutes(base: string, prefix: string): Record<string, Entry> {
  return {
    [`POST ${base}`]: (v) => [
      own(prefix, { email: `${fresh('c')}@example.com` }),
      refused(prefix, { email: `${fresh('c')}@example.com`, topics: choice(v.topic) }),
    ],
    [`GET ${base}`]: (v) => [
      own(prefix),
      own(`${prefix}?email=${enc(v.contactEmail)}`),
      own(`${prefix}?after=${v.contact}`),
    ],
    [`GET ${base}/:id`]: (v) => [nf(`${prefix}/${v.contact}`), nf(`${prefix}/${enc(v.contactEmail)}`)],
    [`PATCH ${base}/:id`]: (v) => [
      nf(`${prefix}/${v.contact}`, { first_name: 'Changed' }),
      nf(`${prefix}/${enc(v.contactEmail)}`, { unsubscribed: true }),
    ],
    [`DELETE ${base}/:id`]: (v) => [nf(`${prefix}/${v.contact}`), nf(`${prefix}/${enc(v.contactEmail)}`)],
  };
}

const audienceFiles: Record<string, Entry> = {
  'POST /contacts/imports': (v) => [
    csv('own', `/contacts/imports?${mapping({ email: 'email' })}`, `email\n${fresh('i')}@example.com\n`),
    // A mapping naming the victim's topic is refused before anything is stored.
    csv(
      'refused',
      `/contacts/imports?${mapping({ email: 'email', topics: { [v.topic]: 'news' } })}`,
      'email,news\na@example.com,yes\n',
    ),
  ],
  'GET /contacts/imports': (v) => [own('/contacts/imports'), own(`/contacts/imports?after=${v.contactImport}`)],
  'GET /contacts/imports/:id': (v) => [nf(`/contacts/imports/${v.contactImport}`)],
  'GET /contacts/imports/:id/errors': (v) => [nf(`/contacts/imports/${v.contactImport}/errors`)],
  'POST /contacts/exports': (v) => [
    own('/contacts/exports', {}),
    refused('/contacts/exports', { segment_id: v.segment }),
  ],
  'GET /contacts/exports': (v) => [own('/contacts/exports'), own(`/contacts/exports?after=${v.contactExport}`)],
  'GET /contacts/exports/:id': (v) => [nf(`/contacts/exports/${v.contactExport}`)],
  'GET /contacts/exports/:id/download': (v) => [nf(`/contacts/exports/${v.contactExport}/download`)],
  'POST /suppressions/imports': (v) => [
    csv('own', '/suppressions/imports', `email\n${fresh('s')}@example.com\n`),
    csv('refused', `/suppressions/imports?domain=${v.domainName}`, `email\n${fresh('s')}@example.com\n`, true),
  ],
  'GET /suppressions/export': (v) => [
    own('/suppressions/export'),
    refused(`/suppressions/export?domain=${v.domainName}`, undefined, true),
  ],
};

const contacts: Record<string, Entry> = {
  ...contactRoutes('/contacts', '/contacts'),
  ...contactRoutes('/audiences/:audience_id/contacts', '/audiences/aud_sweep/contacts'),
  'POST /contacts/:id/subscriptions': (v, o) => [
    nf(`/contacts/${v.contact}/subscriptions`, { unsubscribed: true }),
    nf(`/contacts/${enc(v.contactEmail)}/subscriptions`, { topics: choice(o.topic) }),
    refused(`/contacts/${o.contact}/subscriptions`, { topics: choice(v.topic) }),
  ],
  'GET /contacts/:id/subscriptions': (v) => [nf(`/contacts/${v.contact}/subscriptions`)],
  'PATCH /contacts/:id/topics': (v, o) => [
    nf(`/contacts/${v.contact}/topics`, choice(o.topic)),
    refused(`/contacts/${o.contact}/topics`, choice(v.topic)),
  ],
  'GET /contacts/:id/topics': (v) => [nf(`/contacts/${v.contact}/topics`)],
  'POST /contacts/:id/segments/:segment_id': (v, o) => [
    nf(`/contacts/${v.contact}/segments/${o.segment}`),
    nf(`/contacts/${o.contact}/segments/${v.segment}`),
    nf(`/contacts/${v.contact}/segments/${v.segment}`),
  ],
  'DELETE /contacts/:id/segments/:segment_id': (v, o) => [
    nf(`/contacts/${v.contact}/segments/${o.segment}`),
    nf(`/contacts/${o.contact}/segments/${v.segment}`),
  ],
  'GET /contacts/:id/segments': (v, o) => [
    nf(`/contacts/${v.contact}/segments`),
    own(`/contacts/${o.contact}/segments?after=${v.segment}`),
  ],
};

const topicsAndSegments: Record<string, Entry> = {
  'POST /topics': () => [own('/topics', { name: fresh('topic'), default_subscription: 'opt_out' })],
  'GET /topics': (v) => [own('/topics'), own(`/topics?after=${v.topic}`)],
  'GET /topics/:id': (v) => [nf(`/topics/${v.topic}`)],
  'PATCH /topics/:id': (v) => [nf(`/topics/${v.topic}`, { description: 'Changed' })],
  'DELETE /topics/:id': (v) => [nf(`/topics/${v.topic}`)],
  'POST /segments': (v) => [
    own('/segments', { name: fresh('seg'), filter: { all: [] } }),
    refused('/segments', { name: fresh('seg'), filter: { all: [{ topic: v.topic, subscribed: true }] } }),
  ],
  'GET /segments': (v) => [own('/segments'), own(`/segments?after=${v.segment}`)],
  'GET /segments/:id': (v) => [nf(`/segments/${v.segment}`)],
  'PATCH /segments/:id': (v, o) => [
    nf(`/segments/${v.segment}`, { name: 'Changed' }),
    refused(`/segments/${o.segment}`, { filter: { any: [{ topic: v.topic, subscribed: false }] } }),
  ],
  'DELETE /segments/:id': (v) => [nf(`/segments/${v.segment}`)],
  'GET /segments/:id/contacts': (v) => [nf(`/segments/${v.segment}/contacts`)],
};

const eventsAndBroadcasts: Record<string, Entry> = {
  'POST /events': (v) => [
    own('/events', { name: 'sweep', email: `${fresh('ev')}@example.com` }),
    refused('/events', { name: 'sweep', contact_id: v.contact }),
  ],
  'POST /events/send': (v) => [
    own('/events/send', { event: 'sweep', email: `${fresh('ev')}@example.com`, payload: { plan: 'pro' } }),
    refused('/events/send', { event: 'sweep', contact_id: v.contact }),
  ],
  'POST /broadcasts': (v, o) => [
    own('/broadcasts', broadcast(o)),
    refused('/broadcasts', broadcast(o, { from: from(v) }), true),
    refused('/broadcasts', broadcast(o, { segment_id: v.segment })),
    refused('/broadcasts', broadcast(o, { audience_id: v.segment, segment_id: undefined })),
    refused('/broadcasts', broadcast(o, { topic_id: v.topic })),
    refused('/broadcasts', broadcast(o, { html: undefined, template: v.template })),
  ],
  'GET /broadcasts': (v) => [own('/broadcasts'), own(`/broadcasts?after=${v.broadcast}`)],
  'GET /broadcasts/:id': (v) => [nfBound(`/broadcasts/${v.broadcast}`)],
  'PATCH /broadcasts/:id': (v, o) => [
    nfBound(`/broadcasts/${v.broadcast}`, { subject: 'Changed' }),
    refused(`/broadcasts/${o.broadcast}`, { segment_id: v.segment }),
    refused(`/broadcasts/${o.broadcast}`, { from: from(v) }, true),
  ],
  'DELETE /broadcasts/:id': (v) => [nfBound(`/broadcasts/${v.broadcast}`)],
  'POST /broadcasts/:id/send': (v) => [nfBound(`/broadcasts/${v.broadcast}/send`, {})],
  'POST /broadcasts/:id/cancel': (v) => [nfBound(`/broadcasts/${v.broadcast}/cancel`, {})],
};

const automations: Record<string, Entry> = {
  'POST /automations': (v, o) => [
    own('/automations', { name: fresh('aut'), trigger: { event: 'x' }, steps: [{ wait: '1d' }] }),
    refused('/automations', {
      name: fresh('aut'),
      trigger: { event: 'x' },
      steps: [{ send: { template: v.template, from: from(o) } }],
    }),
    refused('/automations', {
      name: fresh('aut'),
      trigger: { event: 'x' },
      steps: [{ condition: { any: [{ topic: v.topic, subscribed: true }] }, then: 'end', else: 'end' }],
    }),
  ],
  'GET /automations': (v) => [own('/automations'), own(`/automations?after=${v.automation}`)],
  'GET /automations/:id': (v) => [nf(`/automations/${v.automation}`)],
  'PATCH /automations/:id': (v, o) => [
    nf(`/automations/${v.automation}`, { status: 'disabled' }),
    refused(`/automations/${o.automation}`, { steps: [{ condition: { topic: v.topic, subscribed: false } }] }),
  ],
  'DELETE /automations/:id': (v) => [nf(`/automations/${v.automation}`)],
  'GET /automations/:id/runs': (v) => [
    nf(`/automations/${v.automation}/runs`),
    nf(`/automations/${v.automation}/runs?status=active`),
  ],
  'GET /automations/:id/runs/:run_id': (v) => [nf(`/automations/${v.automation}/runs/${v.automationRun}`)],
};

export const SWEEP: Record<string, Entry> = {
  ...keys,
  ...domains,
  ...emails,
  ...templates,
  ...suppressions,
  ...webhooks,
  ...reads,
  ...contacts,
  ...audienceFiles,
  ...topicsAndSegments,
  ...eventsAndBroadcasts,
  ...automations,
};
