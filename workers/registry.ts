// The literal list of queues this worker process can consume. Each entry names its queue (from
// shared/queues.ts) and builds its BullMQ Worker.
import type { Worker } from 'bullmq';
import { QUEUE_NAMES } from '../shared/queues.js';
import { startDeliveryWorker } from './delivery.js';
import type { WorkerDeps } from './deps.js';
import { startMetricsWorker } from './metrics.js';
import { webhookDeliveryConsumer } from './webhook-delivery.js';
import { webhookFanoutConsumer } from './webhook-fanout.js';
import { startInboundWorker } from './inbound.js';
import { broadcastConsumer } from './broadcast.js';
import { automationConsumer } from './automation.js';

export interface QueueConsumer {
  queue: string;
  start(deps: WorkerDeps): Worker | Promise<Worker>;
}

export const registry: QueueConsumer[] = [
  { queue: QUEUE_NAMES.delivery, start: (deps) => startDeliveryWorker(deps) },
  { queue: QUEUE_NAMES.metrics, start: (deps) => startMetricsWorker(deps) },
  webhookFanoutConsumer,
  webhookDeliveryConsumer,
  { queue: QUEUE_NAMES.inbound, start: (deps) => startInboundWorker(deps) },
  broadcastConsumer,
  automationConsumer,
];
