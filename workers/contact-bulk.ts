// The `contact-bulk` queue: contact imports (workers/contact-import.ts) and exports
// (workers/contact-export.ts), one job each, one at a time per process by default (an import
// keeps a core busy). The sweeper, every CONTACT_BULK_SWEEP seconds, re-adds a job for each
// import or export whose lease ran out without finishing (a worker that died, a job lost with
// Redis), and removes uploads abandoned while they were being received.
import { Worker, type Job } from 'bullmq';
import { enqueueContactBulk } from '../shared/contact-bulk-jobs.js';
import { stalledExports } from '../shared/db/contact-exports.js';
import { deleteAbandonedUploads, stalledImports } from '../shared/db/contact-imports.js';
import { QUEUE_NAMES, type ContactBulkJob, WORKER_RETRY } from '../shared/queues.js';
import { processExport } from './contact-export.js';
import { processImport, type ImportOptions } from './contact-import.js';
import type { QueueConsumer, WorkerDeps } from './deps.js';
import { runEvery } from './periodic.js';
import { logWorkerErrors } from './worker-errors.js';

/** An upload still `receiving` after this long was abandoned by its web process. */
const ABANDONED_UPLOAD_SECONDS = 3600;

/** Re-adds the jobs of stalled imports and exports; returns how many. */
export async function sweepContactBulk(deps: WorkerDeps, graceSeconds = 30): Promise<number> {
  await deleteAbandonedUploads(deps.sql, ABANDONED_UPLOAD_SECONDS);
  const imports = await stalledImports(deps.sql, graceSeconds, 100);
  const exports = await stalledExports(deps.sql, graceSeconds, 100);
  const stamp = Date.now();
  for (const id of imports) await enqueueContactBulk(deps.queues, 'import', id, `${id}-sweep-${stamp}`);
  for (const id of exports) await enqueueContactBulk(deps.queues, 'export', id, `${id}-sweep-${stamp}`);
  const n = imports.length + exports.length;
  if (n > 0) deps.logger.warn({ event: 'CONTACT_BULK_SWEEP_REQUEUED', imports, exports }, 're-enqueued stalled jobs');
  return n;
}

export interface ContactBulkWorkerOptions {
  concurrency?: number;
  /** 0 disables the sweeper. */
  sweepEveryMs?: number;
  sweepGraceSeconds?: number;
  import?: ImportOptions;
}

export function startContactBulkWorker(deps: WorkerDeps, opts: ContactBulkWorkerOptions = {}): Worker<ContactBulkJob> {
  const worker = new Worker<ContactBulkJob>(
    QUEUE_NAMES.contactBulk,
    async (job: Job<ContactBulkJob>) =>
      job.data.kind === 'import'
        ? await processImport(deps, job.data.id, opts.import)
        : await processExport(deps, job.data.id),
    {
      connection: deps.bull,
      prefix: deps.redisKeys.bullPrefix,
      ...WORKER_RETRY,
      concurrency: opts.concurrency ?? deps.config.contactBulkConcurrency,
    },
  );
  worker.on('failed', (job, err) =>
    deps.logger.error({ event: 'CONTACT_BULK_JOB_FAILED', id: job?.data.id, err }, 'contact import/export job failed'),
  );
  logWorkerErrors(worker, deps.logger, 'CONTACT_BULK_WORKER_ERROR');
  const every = opts.sweepEveryMs ?? deps.config.contactBulkSweepSeconds * 1000;
  if (every > 0) {
    const stop = runEvery(
      every,
      () => sweepContactBulk(deps, opts.sweepGraceSeconds),
      (err) => deps.logger.warn({ event: 'CONTACT_BULK_SWEEP_FAILED', err }, 'sweep failed'),
    );
    worker.on('closing', stop);
  }
  return worker;
}

export const contactBulkConsumer: QueueConsumer = {
  queue: QUEUE_NAMES.contactBulk,
  start: (deps) => startContactBulkWorker(deps),
};
