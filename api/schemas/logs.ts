// Request schema of GET /logs (DESIGN §21).
import type { RequestLogFilter } from '../../shared/db/request-logs.js';
import { paginationProperties, type Pagination } from '../validate.js';

export type ListLogsQuery = Pagination & RequestLogFilter;

export const listLogsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...paginationProperties,
    status: { type: 'integer', minimum: 100, maximum: 599 },
    path: { type: 'string', minLength: 1, maxLength: 2000, pattern: '^/' },
    key_id: { type: 'string', minLength: 1, maxLength: 64 },
    since: { type: 'string', format: 'date-time' },
    until: { type: 'string', format: 'date-time' },
  },
} as const;
