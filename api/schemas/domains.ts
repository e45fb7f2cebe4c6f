// Request schemas of the domain routes (DESIGN §5).
import { MAX_ROUTES, type InboundRoute } from '../../shared/domains/inbound-routes.js';
import { paginationProperties } from '../validate.js';

export interface CreateDomainBody {
  name: string;
  region?: string;
  tls?: 'opportunistic';
}

// Resend's domain settings, taken so that its SDK's calls pass (docs/api/domains.md): `region`
// names where Resend sends from, which here is this install's own addresses, so it changes
// nothing; `tls` takes Resend's default only, as Tern encrypts whenever the receiver offers it
// and has no per-domain "TLS or nothing" setting ("enforced" is refused, naming the field).
const resendDomainFields = {
  region: { type: 'string', enum: ['us-east-1', 'eu-west-1', 'sa-east-1', 'ap-northeast-1'] },
  tls: { type: 'string', enum: ['opportunistic'] },
} as const;

export const createDomainSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    // The syntax is checked after IDN normalisation (shared/mail/domain-name.ts).
    name: { type: 'string', minLength: 1, maxLength: 253, format: 'label' },
    ...resendDomainFields,
  },
} as const;

export interface UpdateDomainBody {
  open_tracking?: boolean | null;
  click_tracking?: boolean | null;
  warmup?: boolean;
  inbound?: { enabled?: boolean; routes?: InboundRoute[] };
  tls?: 'opportunistic';
}

/** `inbound` of PATCH /domains/{id}: each part omitted keeps its stored value. */
const inboundSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    routes: {
      type: 'array',
      maxItems: MAX_ROUTES,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['match', 'action'],
        properties: {
          // "*", "*@<domain>", "local@<domain>" (also matches local+tag@) or "local+tag@<domain>".
          match: { type: 'string', minLength: 1, maxLength: 320, format: 'label' },
          action: { type: 'string', enum: ['webhook', 'forward', 'reject'] },
          forward_to: { type: 'string', minLength: 3, maxLength: 254, format: 'label' },
          // With RSPAMD_URL: a message scored above this is refused for this route (docs/inbound.md).
          spam_threshold: { type: 'number', minimum: -1000, maximum: 1000 },
        },
      },
    },
  },
} as const;

export const updateDomainSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    // null = inherit the organization's tracking default.
    open_tracking: { type: 'boolean', nullable: true },
    click_tracking: { type: 'boolean', nullable: true },
    // false: an established domain, whose warm-up ramp is skipped (its IP pool's still applies).
    warmup: { type: 'boolean' },
    inbound: inboundSchema,
    tls: resendDomainFields.tls,
  },
} as const;

export const dmarcQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    days: { type: 'integer', minimum: 1, maximum: 365, default: 30 },
  },
} as const;

export const listDomainsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;
