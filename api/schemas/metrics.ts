// Query of GET /metrics (SPEC "GET /metrics").

export interface MetricsQuery {
  days: number;
  domain?: string;
  facet?: 'provider' | 'key' | 'template' | 'kind' | 'stream';
  key?: string;
  format: 'json' | 'csv';
}

export const metricsQuerySchema = {
  type: 'object',
  // Unknown parameters (cache busters, tracking) are ignored rather than refused.
  additionalProperties: true,
  properties: {
    days: { type: 'integer', minimum: 1, maximum: 90, default: 30 },
    domain: { type: 'string', minLength: 1, maxLength: 253 },
    facet: { type: 'string', enum: ['provider', 'key', 'template', 'kind', 'stream'] },
    key: { type: 'string', maxLength: 256, format: 'label' },
    format: { type: 'string', enum: ['json', 'csv'], default: 'json' },
  },
} as const;
