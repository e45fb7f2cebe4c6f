// The literal list of queues this worker process can consume. Each entry names its queue (from
// shared/queues.ts) and builds its BullMQ Worker.
import type { Worker } from 'bullmq';
import type { WorkerDeps } from './deps.js';
import { webhookDeliveryConsumer } from './webhook-delivery.js';
import { webhookFanoutConsumer } from './webhook-fanout.js';

export interface QueueConsumer {
  queue: string;
  start(deps: WorkerDeps): Worker | Promise<Worker>;
}

export const registry: QueueConsumer[] = [webhookFanoutConsumer, webhookDeliveryConsumer];
