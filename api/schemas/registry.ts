// Every request schema by the name the permission table gives it (shared/permissions.ts). The
// routes validate with these objects (api/route-schemas.ts) and the OpenAPI document shows them
// (api/openapi/): a name the table uses and this registry lacks stops the app at start-up.
import {
  automationListQuerySchema,
  createAutomationSchema,
  patchAutomationSchema,
  runListQuerySchema,
} from './automations.js';
import {
  broadcastListQuerySchema,
  createBroadcastSchema,
  patchBroadcastSchema,
  sendBroadcastSchema,
} from './broadcasts.js';
import {
  listContactsQuerySchema,
  patchContactSchema,
  subscriptionsSchema,
  topicChoicesSchema,
  upsertContactSchema,
} from './contacts.js';
import {
  contactImportMappingSchema,
  contactImportQuerySchema,
  createContactExportSchema,
  listContactImportsQuerySchema,
} from './contact-imports.js';
import { createDomainSchema, dmarcQuerySchema, listDomainsQuerySchema, updateDomainSchema } from './domains.js';
import {
  batchBodySchema,
  batchItemSchema,
  listEmailsQuerySchema,
  listEventsQuerySchema,
  rawQuerySchema,
  sendEmailSchema,
  updateEmailSchema,
} from './emails.js';
import { postEventSchema } from './events.js';
import { listInboundQuerySchema } from './inbound.js';
import { listLogsQuerySchema } from './logs.js';
import { createKeySchema, listKeysQuerySchema, rotateKeySchema } from './keys.js';
import { metricsQuerySchema } from './metrics.js';
import { listAuditLogQuerySchema, updateOrganizationSchema } from './organization.js';
import { createSegmentSchema, patchSegmentSchema, segmentListQuerySchema } from './segments.js';
import {
  createSuppressionSchema,
  listSuppressionsQuerySchema,
  suppressionExportQuerySchema,
  suppressionImportQuerySchema,
  suppressionRefQuerySchema,
} from './suppressions.js';
import { createTemplateSchema, listTemplatesQuerySchema, updateTemplateSchema } from './templates.js';
import { createTopicSchema, listTopicsQuerySchema, patchTopicSchema } from './topics.js';
import {
  createWebhookSchema,
  listDeliveriesQuerySchema,
  listWebhooksQuerySchema,
  rotateSecretSchema,
  testWebhookSchema,
  updateWebhookSchema,
} from './webhooks.js';

/** Request bodies: each becomes `components.schemas.<name>` of the OpenAPI document. */
export const BODY_SCHEMAS: Record<string, object> = {
  CreateKey: createKeySchema,
  RotateKey: rotateKeySchema,
  UpdateOrganization: updateOrganizationSchema,
  CreateDomain: createDomainSchema,
  UpdateDomain: updateDomainSchema,
  SendEmail: sendEmailSchema,
  SendEmailBatch: batchBodySchema,
  SendEmailBatchItem: batchItemSchema,
  UpdateEmail: updateEmailSchema,
  CreateTemplate: createTemplateSchema,
  UpdateTemplate: updateTemplateSchema,
  CreateSuppression: createSuppressionSchema,
  CreateWebhook: createWebhookSchema,
  UpdateWebhook: updateWebhookSchema,
  RotateWebhookSecret: rotateSecretSchema,
  TestWebhook: testWebhookSchema,
  UpsertContact: upsertContactSchema,
  UpdateContact: patchContactSchema,
  ContactSubscriptions: subscriptionsSchema,
  ContactTopicChoices: topicChoicesSchema,
  // A form field of POST /contacts/imports (or its `mapping` query parameter), not a whole body.
  ContactImportMapping: contactImportMappingSchema,
  CreateContactExport: createContactExportSchema,
  CreateTopic: createTopicSchema,
  UpdateTopic: patchTopicSchema,
  CreateSegment: createSegmentSchema,
  UpdateSegment: patchSegmentSchema,
  PostEvent: postEventSchema,
  CreateBroadcast: createBroadcastSchema,
  UpdateBroadcast: patchBroadcastSchema,
  SendBroadcast: sendBroadcastSchema,
  CreateAutomation: createAutomationSchema,
  UpdateAutomation: patchAutomationSchema,
};

/**
 * A body schema whose items are validated one by one by its handler (POST /emails/batch: each
 * item's error names its index, and `x-batch-validation: permissive` keeps the valid ones).
 */
export const BODY_ITEM_SCHEMAS: Record<string, string> = {
  SendEmailBatch: 'SendEmailBatchItem',
};

/** Query strings: each property becomes a query parameter of the operation. */
export const QUERY_SCHEMAS: Record<string, object> = {
  ListAuditLogQuery: listAuditLogQuerySchema,
  ListKeysQuery: listKeysQuerySchema,
  ListDomainsQuery: listDomainsQuerySchema,
  DmarcQuery: dmarcQuerySchema,
  ListEmailsQuery: listEmailsQuerySchema,
  ListEmailEventsQuery: listEventsQuerySchema,
  RawEmailQuery: rawQuerySchema,
  ListTemplatesQuery: listTemplatesQuerySchema,
  ListSuppressionsQuery: listSuppressionsQuerySchema,
  SuppressionRefQuery: suppressionRefQuerySchema,
  SuppressionImportQuery: suppressionImportQuerySchema,
  SuppressionExportQuery: suppressionExportQuerySchema,
  ListWebhooksQuery: listWebhooksQuerySchema,
  ListWebhookDeliveriesQuery: listDeliveriesQuerySchema,
  MetricsQuery: metricsQuerySchema,
  ListLogsQuery: listLogsQuerySchema,
  ListInboundQuery: listInboundQuerySchema,
  ListContactsQuery: listContactsQuerySchema,
  ContactImportQuery: contactImportQuerySchema,
  ListContactImportsQuery: listContactImportsQuerySchema,
  ListTopicsQuery: listTopicsQuerySchema,
  ListSegmentsQuery: segmentListQuerySchema,
  ListBroadcastsQuery: broadcastListQuerySchema,
  ListAutomationsQuery: automationListQuerySchema,
  ListAutomationRunsQuery: runListQuerySchema,
};
