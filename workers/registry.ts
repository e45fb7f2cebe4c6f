// The literal list of queues this worker process can consume. Each entry names its queue (from
// shared/queues.ts) and builds its BullMQ Worker. Empty until the first queue lands.
import type { Worker } from 'bullmq';
import type { WorkerDeps } from './deps.js';

export interface QueueConsumer {
  queue: string;
  start(deps: WorkerDeps): Worker | Promise<Worker>;
}

export const registry: QueueConsumer[] = [];
