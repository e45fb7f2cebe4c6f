// Response schemas of the domain, key, webhook, suppression and contact routes.
import { WEBHOOK_EVENT_TYPES } from '../../../shared/events.js';
import {
  arrayOf,
  bool,
  constant,
  deleted,
  int,
  intOrNull,
  object,
  oneOf,
  ref,
  str,
  strings,
  strOrNull,
  time,
  timeOrNull,
  type Schema,
} from './build.js';

const boolOrNull: Schema = { type: ['boolean', 'null'] };

const keyFields: Record<string, Schema> = {
  object: constant('api_key'),
  id: { type: 'string', description: 'Key id (`key_…`); also the SMTP relay username.' },
  name: str,
  permission: oneOf(['SEND', 'FULL', 'ADMIN']),
  mode: oneOf(['live', 'test']),
  domains: { type: 'array', items: str, description: 'Domain names the key is restricted to; empty: none.' },
  token_prefix: str,
  created_at: time,
};
const keyState: Record<string, Schema> = { last_used_at: timeOrNull, revoked_at: timeOrNull };

const webhookFields: Record<string, Schema> = {
  object: constant('webhook'),
  id: str,
  url: str,
  /** Resend's name for `url`. */
  endpoint: str,
  events: arrayOf(oneOf(WEBHOOK_EVENT_TYPES)),
  description: strOrNull,
  status: oneOf(['enabled', 'disabled']),
  disabled_reason: strOrNull,
  previous_secret_expires_at: timeOrNull,
  created_at: time,
  updated_at: time,
};

const contactFields: Record<string, Schema> = {
  object: constant('contact'),
  id: str,
  email: str,
  first_name: strOrNull,
  last_name: strOrNull,
  properties: {
    type: 'object',
    additionalProperties: { type: ['string', 'number', 'boolean', 'null'] },
  },
  unsubscribed: bool,
  created_at: time,
};

export const resourceResponses: Record<string, Schema> = {
  Domain: object({
    object: constant('domain'),
    id: { type: 'string', description: 'Domain id (`dom_…`).' },
    name: str,
    status: oneOf(['pending', 'verified', 'failed']),
    demo: {
      type: 'boolean',
      description: 'The demo domain of `npm start` (`demo.test`): test keys only, never leaves the machine.',
    },
    created_at: time,
    verified_at: timeOrNull,
    last_checked_at: timeOrNull,
    open_tracking: { ...boolOrNull, description: 'null: the organization default.' },
    click_tracking: { ...boolOrNull, description: 'null: the organization default.' },
    warmup: {
      type: 'boolean',
      description:
        'The domain follows the daily warm-up ramp from its verification day; false: an established domain (no ramp; the warm-up of IP pool addresses still applies).',
    },
    records: arrayOf(ref('DomainRecord')),
    inbound: ref('DomainInbound'),
  }),
  DomainInbound: object(
    {
      enabled: { type: 'boolean', description: 'The MX receives on the domain’s own addresses (once verified).' },
      routes: arrayOf(
        object(
          {
            match: {
              type: 'string',
              description: '`*`, `*@<domain>`, or an address (`local@` also takes `local+tag@`).',
            },
            action: oneOf(['webhook', 'forward', 'reject']),
            forward_to: str,
            spam_threshold: { type: 'number', description: 'A message rspamd scores above this is refused.' },
          },
          ['forward_to', 'spam_threshold'],
        ),
      ),
    },
    [],
    'Inbound routes; the most specific match wins (address, `local@` for `local+tag@`, `*@domain`, `*`).',
  ),
  DomainRecord: object(
    {
      record: oneOf(['DKIM', 'SPF', 'MX_BOUNCE', 'MX_REPLY', 'MX_INBOUND', 'DMARC']),
      name: str,
      type: oneOf(['TXT', 'MX']),
      value: str,
      ttl: constant('Auto'),
      priority: int,
      status: oneOf(['pending', 'verified', 'failed']),
      reason: { type: 'string', description: 'Why the last check did not verify the record.' },
    },
    ['priority', 'reason'],
    'A DNS record to publish.',
  ),
  DomainDeleted: deleted('domain', { name: str }),
  DmarcSummary: object(
    {
      object: constant('dmarc_summary'),
      domain: str,
      days: int,
      reporters: arrayOf(object({ name: str, email: strOrNull, reports: int, messages: int })),
      sources: arrayOf(
        object({
          ip: str,
          own: { type: 'boolean', description: 'One of this install’s sending addresses.' },
          messages: int,
          spf_aligned: { type: 'integer', description: 'Messages that passed SPF alignment.' },
          dkim_aligned: { type: 'integer', description: 'Messages that passed DKIM alignment.' },
          disposition: object({ none: int, quarantine: int, reject: int }),
          reporters: strings,
        }),
      ),
    },
    [],
    'DMARC aggregate reports of one domain, by reporter and by source IP, most messages first.',
  ),

  KeyIdentity: object(
    {
      id: str,
      name: str,
      mode: oneOf(['live', 'test']),
      permission: oneOf(['SEND', 'FULL', 'ADMIN']),
      domains: strings,
    },
    [],
    'The calling key. `domains`: its restriction, or every verified domain of the organization.',
  ),
  ApiKey: object({ ...keyFields, ...keyState }),
  ApiKeyCreated: object({ ...keyFields, token: { type: 'string', description: 'Shown this once.' } }),
  ApiKeyRotated: object({
    ...keyFields,
    ...keyState,
    token: { type: 'string', description: 'The new token, shown this once.' },
    previous_token_expires_at: time,
  }),
  ApiKeyRevoked: object({ ...keyFields, ...keyState, deleted: constant(true) }),

  Webhook: object(webhookFields),
  WebhookWithSecret: object({
    ...webhookFields,
    signing_secret: { type: 'string', description: 'The HMAC secret (`whsec_…`), shown on create and rotate.' },
  }),
  WebhookDeleted: deleted('webhook'),
  WebhookDelivery: object({
    object: constant('webhook_delivery'),
    id: str,
    webhook_id: str,
    event_id: str,
    event_type: str,
    status: oneOf(['pending', 'succeeded', 'failed']),
    attempts: int,
    last_status_code: intOrNull,
    last_error: strOrNull,
    next_attempt_at: timeOrNull,
    created_at: time,
    completed_at: timeOrNull,
    history: arrayOf(
      object({
        attempt: int,
        started_at: time,
        finished_at: timeOrNull,
        status_code: intOrNull,
        latency_ms: intOrNull,
        error: strOrNull,
      }),
    ),
  }),
  WebhookDeliveryRetried: object({
    object: constant('webhook_delivery'),
    id: str,
    status: oneOf(['pending', 'succeeded', 'failed']),
    next_attempt_at: timeOrNull,
  }),
  WebhookTestQueued: object({
    object: constant('webhook_delivery'),
    id: str,
    event_id: str,
    event_type: str,
    status: oneOf(['pending', 'succeeded', 'failed']),
  }),

  Suppression: object({
    object: constant('suppression'),
    id: str,
    email: { type: ['string', 'null'], description: 'The address; null for a rule.' },
    pattern: { type: ['string', 'null'], description: 'The rule (`*` is the only wildcard); null for an address.' },
    domain: { type: ['string', 'null'], description: 'null: organization-wide.' },
    reason: oneOf(['hard_bounce', 'complaint', 'unsubscribe', 'manual']),
    source_email_id: strOrNull,
    created_at: time,
  }),
  SuppressionDeleted: deleted('suppression', { email: strOrNull, pattern: strOrNull, deleted_ids: strings }),

  Contact: object(contactFields),
  ContactDeleted: deleted('contact', { contact: str }),
  Subscriptions: object({
    object: constant('subscriptions'),
    contact_id: str,
    email: str,
    unsubscribed: bool,
    topics: arrayOf(
      object({
        id: str,
        name: str,
        default_subscription: oneOf(['opt_in', 'opt_out']),
        subscription: oneOf(['opt_in', 'opt_out']),
        explicit: { type: 'boolean', description: 'false: the contact follows the topic default.' },
      }),
    ),
  }),
  ContactTopics: object({
    object: constant('list'),
    has_more: bool,
    data: arrayOf(object({ id: str, name: str, description: strOrNull, subscription: oneOf(['opt_in', 'opt_out']) })),
  }),
  ContactRef: object({ id: str }),
};
