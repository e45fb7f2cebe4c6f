// Query schema of the inbound routes (DESIGN §5 Inbound).
import { paginationProperties } from '../validate.js';

export const listInboundQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;
