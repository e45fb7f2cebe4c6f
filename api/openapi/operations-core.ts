// Operation docs of the key, organization, domain, email, template, suppression, webhook, metrics
// and inbound routes, keyed as the permission table keys its rows.
import type { OperationDocs } from './types.js';

export const coreOperations: OperationDocs = {
  'GET /keys/me': {
    summary: 'The calling key',
    description:
      'Who am I: the key, its mode and permission, and the domains it may use. The SMTP relay checks AUTH with it.',
    response: 'KeyIdentity',
  },
  'GET /keys': { summary: 'List keys', response: 'ApiKeyList' },
  'POST /keys': {
    summary: 'Mint a key',
    description:
      'ADMIN keys are minted in the console only (403 `forbidden`); a key never mints above its own tier. The token is in this answer only.',
    response: 'ApiKeyCreated',
    status: [201],
    errors: ['forbidden_domain'],
    example: { name: 'Billing service', permission: 'SEND', mode: 'live', domains: ['acme.com'] },
  },
  'GET /keys/:id': { summary: 'Get a key', response: 'ApiKey' },
  'DELETE /keys/:id': { summary: 'Revoke a key', response: 'ApiKeyRevoked', errors: ['forbidden_domain'] },
  'POST /keys/:id/rotate': {
    summary: 'Rotate a key',
    description:
      'A new token; the old one keeps working for `expires_in` seconds. ADMIN keys are rotated in the console.',
    response: 'ApiKeyRotated',
    errors: ['forbidden', 'forbidden_domain', 'invalid_state'],
    example: { expires_in: 3600 },
  },

  'GET /organization': { summary: 'Get the organization settings', response: 'Organization' },
  'PATCH /organization': {
    summary: 'Change the organization settings',
    description: 'Pause or resume sending, tracking defaults, rate limit, daily cap, alert rules.',
    response: 'Organization',
    example: { sending_paused: true, sending_paused_reason: 'Investigating complaints' },
  },
  'GET /audit-log': {
    summary: 'List the audit log',
    description:
      'Changes made with ADMIN or FULL keys and in the console, newest first: who (`actor`), what (`action`), on which record (`target`), from which address. Filter with `actor` (a key or user id) and `action` (e.g. `key.minted`).',
    response: 'AuditEntryList',
  },

  'POST /domains': {
    summary: 'Add a domain',
    description:
      'Answers the DNS records to publish (DKIM, SPF and MX of the bounce domain, MX of the reply domain, DMARC).',
    response: 'Domain',
    status: [201],
    errors: ['conflict'],
    example: { name: 'acme.com' },
  },
  'GET /domains': { summary: 'List domains', response: 'DomainList' },
  'GET /domains/:id': { summary: 'Get a domain', response: 'Domain' },
  'PATCH /domains/:id': {
    summary: 'Change a domain’s tracking or inbound routes',
    description:
      'Tracking overrides (null: the organization default), and `inbound`: receive on the domain’s own addresses, each recipient matched to a route (`webhook`, `forward` with `forward_to`, `reject`). While inbound is enabled the records include `MX_INBOUND`, the MX of the domain itself.',
    response: 'Domain',
    example: {
      open_tracking: false,
      inbound: {
        enabled: true,
        routes: [
          { match: 'support@acme.com', action: 'webhook' },
          { match: 'billing@acme.com', action: 'forward', forward_to: 'accounts@example.com' },
          { match: '*', action: 'reject' },
        ],
      },
    },
  },
  'GET /domains/:id/dmarc': {
    summary: 'Summary of the domain’s DMARC aggregate reports',
    description:
      'Reports received at `dmarc@bounces.<domain>` (the `rua` of the suggested DMARC record) whose period ended within `days` days, by reporter and by source IP: messages, how many passed SPF and DKIM alignment, and the receivers’ dispositions. `own`: the source is one of this install’s sending addresses.',
    response: 'DmarcSummary',
  },
  'DELETE /domains/:id': { summary: 'Delete a domain', response: 'DomainDeleted', errors: ['invalid_state'] },
  'POST /domains/:id/verify': { summary: 'Check a domain’s DNS records now', response: 'Domain' },

  'POST /emails': {
    summary: 'Send an email',
    description:
      'Resend-compatible. Stored and queued before the answer; `scheduled_at` delays it. A test key simulates every outcome.',
    response: 'EmailCreated',
    errors: ['forbidden_domain', 'demo_domain', 'outcome_unknown'],
    example: {
      from: 'Acme <hello@acme.com>',
      to: ['ann@example.com'],
      subject: 'Welcome',
      html: '<p>Hello Ann</p>',
      tags: [{ name: 'category', value: 'welcome' }],
    },
  },
  'POST /emails/batch': {
    summary: 'Send up to 100 emails',
    description:
      'One statement stores every item. Items take the fields of `POST /emails`, `attachments` and `scheduled_at` included, with `html`, `text` and attachments bounded per item (128 KiB, 128 KiB, 10 files of 512 KiB in all) so that 100 items at every maximum fit the 128 MiB body limit. `x-batch-validation: strict` (default) refuses the batch when an item is invalid, naming its index; `permissive` stores the valid items and lists the others in `errors`.',
    response: 'EmailBatchCreated',
    errors: ['forbidden_domain', 'demo_domain', 'outcome_unknown'],
    example: [
      { from: 'hello@acme.com', to: 'ann@example.com', subject: 'Hi Ann', text: 'Hello' },
      { from: 'hello@acme.com', to: 'bob@example.com', subject: 'Hi Bob', text: 'Hello' },
    ],
  },
  'GET /emails': { summary: 'List emails', response: 'EmailList' },
  'GET /emails/:id': { summary: 'Get an email', response: 'EmailDetail' },
  'GET /emails/:id/events': { summary: 'List an email’s events', response: 'EmailEventList' },
  'GET /emails/:id/raw': {
    summary: 'Get an email’s MIME (its `raw_url`)',
    description:
      'The message as handed to the receiving server, `message/rfc822`. One MIME per message, or per recipient when tracking or one-click unsubscribe name the recipient (`recipient` picks one). Headers: `tern-raw-source` (`stored`: the bytes the worker kept, as for test messages; `recomposed`: composed now by the same code, as for live messages), `tern-envelope-to`, `tern-envelope-from`.',
    media: 'message/rfc822',
  },
  'PATCH /emails/:id': {
    summary: 'Reschedule an email',
    response: 'EmailRef',
    errors: ['invalid_state'],
    example: { scheduled_at: '2030-01-01T09:00:00Z' },
  },
  'POST /emails/:id/cancel': {
    summary: 'Cancel a scheduled or queued email',
    response: 'EmailRef',
    errors: ['invalid_state'],
  },

  'POST /templates': {
    summary: 'Create a template',
    response: 'Template',
    status: [201],
    errors: ['conflict'],
    example: {
      name: 'Welcome',
      slug: 'welcome',
      subject: 'Welcome, {{{first_name}}}',
      html: '<p>Hi {{{first_name}}}</p>',
    },
  },
  'GET /templates': { summary: 'List templates', response: 'TemplateSummaryList' },
  'GET /templates/:id': { summary: 'Get a template', response: 'Template' },
  'PATCH /templates/:id': {
    summary: 'Change a template’s draft',
    response: 'Template',
    errors: ['conflict'],
    example: { subject: 'Welcome aboard' },
  },
  'POST /templates/:id/publish': {
    summary: 'Publish the draft as a new version',
    response: 'Template',
    errors: ['validation_error'],
  },
  'POST /templates/:id/duplicate': {
    summary: 'Duplicate a template',
    description:
      'A new template holding the draft of this one (subject, html, text, from, variables), named "<name> (copy)" with a slug made from that name, unpublished (Resend’s `templates.duplicate`).',
    response: 'Template',
    status: [201],
  },
  'DELETE /templates/:id': { summary: 'Delete a template', response: 'TemplateDeleted' },

  'POST /suppressions': {
    summary: 'Suppress an address',
    description:
      'Organization-wide, or for one domain. A domain-restricted key must name one of its domains. 201 for a new row, 200 when it existed.',
    response: 'Suppression',
    status: [201, 200],
    errors: ['forbidden_domain', 'unknown_domain'],
    example: { email: 'ann@example.com', domain: 'acme.com' },
  },
  'GET /suppressions': { summary: 'List suppressions', response: 'SuppressionList', errors: ['forbidden_domain'] },
  'GET /suppressions/:id': { summary: 'Get a suppression', response: 'Suppression', errors: ['forbidden_domain'] },
  'DELETE /suppressions/:id': {
    summary: 'Remove a suppression',
    description: 'By id, or by address (every row of it the key may delete; `domain` picks one).',
    response: 'SuppressionDeleted',
    errors: ['forbidden_domain'],
  },

  'POST /webhooks': {
    summary: 'Create a webhook endpoint',
    description: 'The signing secret is in this answer (and in the rotation’s) only.',
    response: 'WebhookWithSecret',
    status: [201],
    example: { url: 'https://example.com/tern', events: ['email.delivered', 'email.bounced'] },
  },
  'GET /webhooks': { summary: 'List webhook endpoints', response: 'WebhookList' },
  'GET /webhooks/:id': { summary: 'Get a webhook endpoint', response: 'Webhook' },
  'PATCH /webhooks/:id': {
    summary: 'Change a webhook endpoint',
    response: 'Webhook',
    example: { status: 'disabled' },
  },
  'DELETE /webhooks/:id': { summary: 'Delete a webhook endpoint', response: 'WebhookDeleted' },
  'POST /webhooks/:id/rotate-secret': {
    summary: 'Rotate the signing secret',
    description: 'Deliveries carry signatures of both secrets until the old one expires.',
    response: 'WebhookWithSecret',
    example: { expires_in: 86400 },
  },
  'GET /webhooks/:id/deliveries': { summary: 'List an endpoint’s deliveries', response: 'WebhookDeliveryList' },
  'POST /webhooks/:id/deliveries/:delivery_id/retry': {
    summary: 'Retry a delivery now',
    response: 'WebhookDeliveryRetried',
    status: [202],
    errors: ['invalid_state'],
  },
  'POST /webhooks/:id/test': {
    summary: 'Send a test event',
    response: 'WebhookTestQueued',
    status: [202],
    errors: ['invalid_state'],
    example: { type: 'email.delivered' },
  },

  'GET /metrics': {
    summary: 'Daily sending metrics',
    description:
      'JSON, or CSV with `format=csv` (the series, or the breakdown when `facet` is set). A domain-restricted key must name one of its domains.',
    restrictedWords:
      'Domain-restricted keys: only their own domains; the organization total (no `domain`) answers 403 `forbidden_domain`, another domain 422 `unknown_domain`.',
    response: 'Metrics',
    errors: ['forbidden_domain', 'unknown_domain'],
  },

  'GET /logs': {
    summary: 'List the API requests of the organization',
    description:
      'Newest first, of the caller’s mode (live keys see live requests, test keys test ones), without bodies; filters: `status`, `path` (a prefix), `key_id`, `since`, `until`. Kept `retention.request_log_days` (default 30).',
    response: 'RequestLogList',
  },
  'GET /logs/:id': {
    summary: 'Get one API request',
    description:
      'With its request and response bodies, secrets removed (tokens, passwords, keys, signing secrets, attachment content).',
    response: 'RequestLog',
  },
  'GET /inbound': { summary: 'List received messages', response: 'InboundList' },
  'GET /inbound/:id': { summary: 'Get a received message', response: 'Inbound' },
  'GET /inbound/:id/attachments': {
    summary: 'List the attachments of a received message',
    description:
      'Each with `download_url`, the address of its bytes (`GET /inbound/{id}/attachments/{attachment_id}`, ADMIN).',
    response: 'InboundAttachmentList',
  },
  'GET /emails/receiving/:id/attachments/:attachment_id': {
    summary: 'Get an attachment of a received message (Resend SDK)',
    description:
      'Its metadata and `download_url` (Resend’s `emails.receiving.attachments.get`); the bytes are at `download_url`.',
    response: 'InboundAttachment',
  },
  'GET /inbound/:id/attachments/:attachment_id': {
    summary: 'Download an attachment of a received message',
    description: 'The attachment’s bytes as received, with its content type and `Content-Disposition: attachment`.',
    media: 'application/octet-stream',
  },
};
