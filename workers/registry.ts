// The literal list of queues this worker process can consume. Each entry names its queue (from
// shared/queues.ts) and builds its BullMQ Worker.
import { QUEUE_NAMES } from '../shared/queues.js';
import { startStreamWorker } from './delivery.js';
import type { QueueConsumer } from './deps.js';
import { startMetricsWorker } from './metrics.js';
import { webhookDeliveryConsumer } from './webhook-delivery.js';
import { webhookFanoutConsumer } from './webhook-fanout.js';
import { startInboundWorker } from './inbound.js';
import { dmarcReportConsumer } from './dmarc-report.js';
import { broadcastConsumer } from './broadcast.js';
import { automationConsumer } from './automation.js';
import { contactBulkConsumer } from './contact-bulk.js';
import { retentionConsumer } from './retention.js';

export const registry: QueueConsumer[] = [
  { queue: QUEUE_NAMES.delivery, start: (deps) => startStreamWorker(deps, 'transactional') },
  { queue: QUEUE_NAMES.deliveryBroadcast, start: (deps) => startStreamWorker(deps, 'broadcast') },
  { queue: QUEUE_NAMES.metrics, start: (deps) => startMetricsWorker(deps) },
  webhookFanoutConsumer,
  webhookDeliveryConsumer,
  { queue: QUEUE_NAMES.inbound, start: (deps) => startInboundWorker(deps) },
  dmarcReportConsumer,
  broadcastConsumer,
  automationConsumer,
  contactBulkConsumer,
  retentionConsumer,
];
