// The literal list of route handler sets. Each key must match a row of shared/permissions.ts.
import type { Handlers } from '../types.js';
import { emailHandlers } from './emails.js';
import { keyHandlers } from './keys.js';
import { templateHandlers } from './templates.js';

export const allHandlers: Handlers = {
  ...keyHandlers,
  ...emailHandlers,
  ...templateHandlers,
};
