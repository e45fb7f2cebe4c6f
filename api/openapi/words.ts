// The permission rules of a route in words (the operation's description), and its tag.
import type { RouteRule } from '../../shared/permissions.js';

const RESTRICTED = {
  allow: 'Domain-restricted keys: allowed, as any key.',
  scoped:
    'Domain-restricted keys: allowed, limited to their own domains (others’ resources answer 404; another domain, 403 `forbidden_domain`).',
  deny: 'Domain-restricted keys: refused (403 `forbidden_domain`).',
} as const;

export function permissionWords(rule: RouteRule, restrictedWords?: string): string {
  const tier =
    rule.tier === 'ANY'
      ? 'any key'
      : rule.tier === 'ADMIN'
        ? 'an ADMIN key'
        : `a ${rule.tier} key or higher (${rule.tier === 'SEND' ? 'SEND, FULL, ADMIN' : 'FULL, ADMIN'})`;
  const parts = [
    `**Permission**: ${tier}; ${rule.liveOnly ? 'live keys only (a test key gets 403 `forbidden`)' : 'live or test'}.`,
    restrictedWords ?? RESTRICTED[rule.restricted],
  ];
  if (rule.sending) parts.push('Refused while the organization’s sending is paused (403 `sending_paused`).');
  if (rule.idempotent) parts.push('Honours `Idempotency-Key`.');
  return parts.join(' ');
}

const TAG_NAMES: Record<string, [string, string]> = {
  keys: ['Keys', 'API keys: identity, minting, rotation, revocation.'],
  organization: ['Organization', 'Settings: pause, tracking, rate limit, caps, alert rules, retention.'],
  'audit-log': ['Organization', ''],
  domains: ['Domains', 'Sending domains, their DNS records and verification.'],
  emails: ['Emails', 'Send, batch, read, reschedule, cancel.'],
  templates: ['Templates', 'Drafts and published versions.'],
  suppressions: ['Suppressions', 'Addresses that live mail is not sent to.'],
  webhooks: ['Webhooks', 'Endpoints, signing secrets, deliveries.'],
  metrics: ['Metrics', 'Daily counters and rates.'],
  inbound: ['Inbound', 'Replies received by the MX, and the HTTP intake.'],
  contacts: ['Contacts', 'The audience, and subscriptions to topics.'],
  audiences: ['Contacts', ''],
  topics: ['Topics', 'What contacts subscribe to.'],
  segments: ['Segments', 'Filters over contacts.'],
  events: ['Events', 'Custom events that start automations.'],
  broadcasts: ['Broadcasts', 'One message to every contact of a segment.'],
  automations: ['Automations', 'Event-triggered sequences.'],
  'openapi.json': ['Meta', 'This document.'],
};

export function tagOf(path: string): string {
  return TAG_NAMES[path.split('/')[1]!]?.[0] ?? 'Other';
}

export const TAGS = Object.values(TAG_NAMES)
  .filter(([, description]) => description !== '')
  .map(([name, description]) => ({ name, description }));
