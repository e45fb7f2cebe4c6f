// The literal list of route handler sets. Each key must match a row of shared/permissions.ts.
import type { Handlers } from '../types.js';
import { auditLogHandlers } from './audit-log.js';
import { automationHandlers } from './automations.js';
import { broadcastHandlers } from './broadcasts.js';
import { contactSegmentHandlers } from './contact-segments.js';
import { subscriptionHandlers } from './contact-subscriptions.js';
import { contactExportHandlers } from './contact-exports.js';
import { contactImportHandlers } from './contact-imports.js';
import { contactHandlers } from './contacts.js';
import { domainHandlers } from './domains.js';
import { emailHandlers } from './emails.js';
import { eventHandlers } from './events.js';
import { inboundHandlers } from './inbound.js';
import { keyHandlers } from './keys.js';
import { logHandlers } from './logs.js';
import { metricsHandlers } from './metrics.js';
import { organizationHandlers } from './organization.js';
import { segmentHandlers } from './segments.js';
import { suppressionBulkHandlers } from './suppressions-bulk.js';
import { suppressionHandlers } from './suppressions.js';
import { templateHandlers } from './templates.js';
import { topicHandlers } from './topics.js';
import { webhookHandlers } from './webhooks.js';

export const allHandlers: Handlers = {
  ...keyHandlers,
  ...domainHandlers,
  ...emailHandlers,
  ...inboundHandlers,
  ...metricsHandlers,
  ...logHandlers,
  ...organizationHandlers,
  ...auditLogHandlers,
  ...suppressionHandlers,
  ...suppressionBulkHandlers,
  ...templateHandlers,
  ...webhookHandlers,
  ...contactHandlers,
  ...contactImportHandlers,
  ...contactExportHandlers,
  ...subscriptionHandlers,
  ...contactSegmentHandlers,
  ...topicHandlers,
  ...segmentHandlers,
  ...eventHandlers,
  ...broadcastHandlers,
  ...automationHandlers,
};
