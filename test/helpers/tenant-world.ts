// One resource of every kind an organization can own, created for the cross-tenant sweep
// (test/int/tenant-sweep.int.test.ts): through the API with the organization's ADMIN key where a
// route creates it, in SQL for what only the workers record (message events, automation runs,
// inbound replies). Every set is tied to one sending domain, so a domain-restricted key of the
// same organization can be aimed at another domain's set.
import { insertRuns } from '../../shared/db/automations.js';
import { insertInbound, saveParsedInbound } from '../../shared/db/inbound.js';
import { recordEvents } from '../../shared/events.js';
import type { SeededOrg } from './seed.js';
import { waitFor } from './wait.js';
import type { TestApi } from './stack.js';

export interface ResourceSet {
  orgId: string;
  domain: string;
  domainName: string;
  /** A SEND key restricted to the domain. */
  key: string;
  keyToken: string;
  /** Scheduled a day ahead: a caller allowed to PATCH or cancel it would succeed. */
  email: string;
  emailEvent: string;
  template: string;
  templateSlug: string;
  /** A suppression of the domain only, and its address. */
  suppression: string;
  suppressedEmail: string;
  /** An organization-wide suppression. */
  orgSuppression: string;
  contact: string;
  contactEmail: string;
  topic: string;
  segment: string;
  broadcast: string;
  automation: string;
  automationRun: string;
  webhook: string;
  webhookSecret: string;
  delivery: string;
  inbound: string;
  /** A line of the request log (GET /logs) of one of the requests above. */
  requestLog: string;
  customEvent: string;
  contactImport: string;
  contactExport: string;
}

/**
 * The ids of a set that only keys allowed on its domain may see: a domain-restricted key of
 * another domain gets 404 (or 403 forbidden_domain) for each (SPEC "Domain restriction").
 */
export const DOMAIN_BOUND: readonly (keyof ResourceSet)[] = [
  'domain',
  'email',
  'emailEvent',
  'suppression',
  'broadcast',
  'inbound',
];

type Created = { status: number; json: Record<string, unknown> & { id?: string } };

async function create(api: TestApi, token: string, path: string, body: unknown): Promise<Created> {
  const res = await api.request('POST', path, { token, body });
  if (res.status >= 300) throw new Error(`seeding ${path}: ${res.status} ${res.text}`);
  return res;
}

/** Creates one resource of every kind on `domainName` (a verified domain of `org`). */
export async function buildResourceSet(api: TestApi, org: SeededOrg, domainName: string): Promise<ResourceSet> {
  const sql = api.deps.sql;
  const token = org.key.token;
  const orgId = org.organization.id;
  const tag = domainName.replace(/\W/g, '-');
  const domain = org.domains[domainName]!;
  const from = `Sweep <hello@${domainName}>`;
  const post = (path: string, body: unknown) => create(api, token, path, body);

  const key = await post('/keys', { name: `restricted ${tag}`, permission: 'SEND', domains: [domainName] });
  const topic = await post('/topics', { name: `News ${tag}`, default_subscription: 'opt_in' });
  const contactEmail = `reader-${tag}@example.com`;
  const contact = await post('/contacts', { email: contactEmail, first_name: 'Reader' });
  const segment = await post('/segments', { name: `All ${tag}`, filter: { all: [] } });
  const templateSlug = `welcome-${tag}`;
  const template = await post('/templates', {
    name: `Welcome ${tag}`,
    slug: templateSlug,
    subject: 'Welcome',
    html: '<p>Hi there</p>',
  });
  await post(`/templates/${template.json.id}/publish`, {});
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
  const email = await post('/emails', {
    from,
    to: ['ann@example.com'],
    subject: `Scheduled ${tag}`,
    text: 'Hello',
    scheduled_at: tomorrow,
  });
  const suppressedEmail = `gone-${tag}@example.com`;
  const suppression = await post('/suppressions', { email: suppressedEmail, domain: domainName });
  const orgSuppression = await post('/suppressions', { email: `org-gone-${tag}@example.com` });
  const broadcast = await post('/broadcasts', {
    name: `Draft ${tag}`,
    from,
    subject: 'News',
    html: '<p>News</p>',
    segment_id: segment.json.id,
  });
  const automation = await post('/automations', {
    name: `Series ${tag}`,
    trigger: { event: `signed_up_${tag}` },
    steps: [{ wait: '2d' }, { send: { template: templateSlug, from } }],
  });
  const webhook = await post('/webhooks', { url: `https://hooks.example.com/${tag}`, description: 'sweep' });
  const test = await post(`/webhooks/${webhook.json.id}/test`, { type: 'email.sent' });
  const customEvent = await post('/events', { name: `signed_up_${tag}`, contact_id: contact.json.id });
  const contactImport = await api.request(
    'POST',
    `/contacts/imports?mapping=${encodeURIComponent(JSON.stringify({ email: 'email', first_name: 'first' }))}`,
    { token, raw: `email,first\nimported-${tag}@example.com,Imp\n`, headers: { 'content-type': 'text/csv' } },
  );
  if (contactImport.status !== 202) throw new Error(`seeding an import: ${contactImport.status} ${contactImport.text}`);
  const contactExport = await post('/contacts/exports', {});

  const [recipient] = await sql<{ id: string }[]>`select id from email_recipients where email_id = ${email.json.id!}`;
  const [event] = await recordEvents(sql, [
    {
      orgId,
      mode: 'live',
      type: 'email.delivered',
      dedupeKey: `${recipient!.id}:sweep`,
      emailId: email.json.id!,
      recipientId: recipient!.id,
      recipient: 'ann@example.com',
      domainId: domain.id,
    },
  ]);
  const [run] = await insertRuns(sql, [
    {
      automation_id: automation.json.id!,
      org_id: orgId,
      contact_id: contact.json.id!,
      occurrence: 'sweep',
      mode: 'live',
      steps: automation.json.steps as never,
      context: {} as never,
    },
  ]);
  const inbound = await seedReply(api, orgId, domain.id, domainName);
  // Written once each answer went out (api/middleware/request-log.ts): wait for one.
  const requestLog = await waitFor('a request log line', async () => {
    const [row] = await sql<{ id: string }[]>`
      select id from request_logs where org_id = ${orgId} and mode = 'live' order by id desc limit 1`;
    return row?.id;
  });

  return {
    orgId,
    domain: domain.id,
    domainName,
    key: key.json.id!,
    keyToken: key.json.token as string,
    email: email.json.id!,
    emailEvent: event!.id,
    template: template.json.id!,
    templateSlug,
    suppression: suppression.json.id!,
    suppressedEmail,
    orgSuppression: orgSuppression.json.id!,
    contact: contact.json.id!,
    contactEmail,
    topic: topic.json.id!,
    segment: segment.json.id!,
    broadcast: broadcast.json.id!,
    automation: automation.json.id!,
    automationRun: run!,
    webhook: webhook.json.id!,
    webhookSecret: webhook.json.signing_secret as string,
    delivery: test.json.id!,
    inbound,
    requestLog,
    customEvent: customEvent.json.id!,
    contactImport: contactImport.json.id as string,
    contactExport: contactExport.json.id!,
  };
}

/** A reply received on reply.<domain>, as the inbound worker leaves it. */
async function seedReply(api: TestApi, orgId: string, domainId: string, domainName: string): Promise<string> {
  const raw = Buffer.from(`From: ann@example.com\r\nTo: reply@reply.${domainName}\r\nSubject: Re\r\n\r\nThanks\r\n`);
  const id = await insertInbound(api.deps.sql, {
    orgId,
    domainId,
    source: 'mx',
    mailFrom: 'ann@example.com',
    rcptTo: [`reply@reply.${domainName}`],
    remoteAddress: '127.0.0.1',
    raw,
  });
  await saveParsedInbound(api.deps.sql, id, {
    orgId,
    domainId,
    kind: 'reply',
    fromAddress: 'ann@example.com',
    to: [`reply@reply.${domainName}`],
    cc: [],
    subject: 'Re',
    text: 'Thanks',
    html: null,
    headers: [{ key: 'subject', value: 'Re' }],
    messageId: null,
    inReplyTo: null,
    emailId: null,
    autoReply: false,
    attachments: [],
  });
  return id;
}
