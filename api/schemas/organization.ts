// Request schema of PATCH /organization (DESIGN §5, §9).

export interface AlertRule {
  metric: 'bounce' | 'complaint';
  /** Percent of the window's sent messages, > 0 and ≤ 100. */
  threshold: number;
  /** The rule is not evaluated below this many sent messages in the window. */
  min_volume: number;
  window_days: number;
  action: 'pause' | 'notify';
}

export interface UpdateOrganizationBody {
  name?: string;
  sending_paused?: boolean;
  sending_paused_reason?: string | null;
  tracking?: { opens?: boolean; clicks?: boolean };
  rate_limit?: { requests_per_second?: number; burst?: number };
  daily_cap?: number | null;
  alert_rules?: AlertRule[];
}

// The bounds of the rate limit match the organizations table's check constraints.
const RATE = { type: 'integer', minimum: 1, maximum: 100000 } as const;

export const updateOrganizationSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    sending_paused: { type: 'boolean' },
    sending_paused_reason: { type: 'string', maxLength: 500, nullable: true },
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
