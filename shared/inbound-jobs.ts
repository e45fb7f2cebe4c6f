// Jobs of the `inbound` queue, shared by the web process (the MX and the HTTP intake store a
// message, then enqueue it) and the worker (its sweeper enqueues messages stored but never
// enqueued), and of the `dmarc-report` queue (the inbound worker hands a DMARC report mail on).
// The job id is the inbound id, so enqueueing a message twice adds one job.
import type { Logger } from './logger.js';
import type { Queues } from './queues.js';

/** Enqueues stored messages; a failure is logged only: the rows are durable and swept later. */
export async function enqueueInbound<Q extends 'inbound' | 'dmarc-report' = 'inbound'>(
  deps: { queues: Pick<Queues, Q>; logger: Logger },
  ids: string[],
  queue: Q = 'inbound' as Q,
): Promise<void> {
  if (ids.length === 0) return;
  await (deps.queues[queue] as Queues['inbound'])
    .addBulk(
      ids.map((inboundId) => ({
        name: queue,
        data: { inboundId },
        opts: { jobId: inboundId, attempts: 8, backoff: { type: 'exponential', delay: 2000 } },
      })),
    )
    .catch((err: unknown) => {
      deps.logger.warn(
        { event: 'INBOUND_ENQUEUE_FAILED', err, ids, queue },
        'stored but not enqueued; the sweeper will process it',
      );
    });
}
