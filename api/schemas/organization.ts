// Request schemas of PATCH /organization (DESIGN §5, §9, §15) and GET /audit-log (§15).
import type { AlertRule } from '../../shared/db/orgs.js';
import { paginationProperties } from '../validate.js';

export interface UpdateOrganizationBody {
  name?: string;
  sending_paused?: boolean;
  sending_paused_reason?: string | null;
  tracking?: { opens?: boolean; clicks?: boolean };
  rate_limit?: { requests_per_second?: number; burst?: number };
  daily_cap?: number | null;
  alert_rules?: AlertRule[];
  retention?: { content_days?: number; events_days?: number; request_log_days?: number };
}

// Days a message's content and the event log are kept (docs/operations.md "Retention").
const DAYS = { type: 'integer', minimum: 1, maximum: 3650 } as const;

// The bounds of the rate limit match the organizations table's check constraints.
const RATE = { type: 'integer', minimum: 1, maximum: 100000 } as const;

export const updateOrganizationSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200, format: 'label' },
    sending_paused: { type: 'boolean' },
    // Shown in SMTP replies and error messages: one line.
    sending_paused_reason: { type: 'string', maxLength: 500, nullable: true, format: 'label' },
    tracking: {
      type: 'object',
      additionalProperties: false,
      properties: { opens: { type: 'boolean' }, clicks: { type: 'boolean' } },
    },
    rate_limit: {
      type: 'object',
      additionalProperties: false,
      properties: { requests_per_second: RATE, burst: RATE },
    },
    // null = no organization cap (domains still follow their warm-up ramp).
    daily_cap: { type: 'integer', minimum: 0, maximum: 1000000000, nullable: true },
    retention: {
      type: 'object',
      additionalProperties: false,
      properties: { content_days: DAYS, events_days: DAYS, request_log_days: DAYS },
    },
    alert_rules: {
      type: 'array',
      maxItems: 20,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['metric', 'threshold', 'action'],
        properties: {
          metric: { type: 'string', enum: ['bounce', 'complaint'] },
          threshold: { type: 'number', exclusiveMinimum: 0, maximum: 100 },
          min_volume: { type: 'integer', minimum: 0, maximum: 1000000000, default: 0 },
          window_days: { type: 'integer', minimum: 1, maximum: 90, default: 1 },
          action: { type: 'string', enum: ['pause', 'notify'] },
        },
      },
    },
  },
} as const;

export interface ListAuditLogQuery {
  limit: number;
  after?: string;
  before?: string;
  /** A key id (`key_…`) or a console user id (`usr_…`). */
  actor?: string;
  action?: string;
}

export const listAuditLogQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...paginationProperties,
    actor: { type: 'string', minLength: 1, maxLength: 64, format: 'label' },
    action: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[a-z_]+\\.[a-z_]+$' },
  },
} as const;
