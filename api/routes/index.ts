// The literal list of route handler sets. Each key must match a row of shared/permissions.ts.
import type { Handlers } from '../types.js';
import { inboundHandlers } from './inbound.js';
import { keyHandlers } from './keys.js';
import { suppressionHandlers } from './suppressions.js';
import { templateHandlers } from './templates.js';

export const allHandlers: Handlers = {
  ...keyHandlers,
  ...inboundHandlers,
  ...templateHandlers,
  ...suppressionHandlers,
};
