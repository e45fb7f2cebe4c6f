// Jobs of the `contact-bulk` queue, added by the API (a new import or export) and by the
// worker's sweeper (one whose job was lost, or whose worker died). The job id is the import's
// or export's id, so adding it twice adds one job; the sweeper adds a fresh id, and the lease in
// Postgres keeps two jobs of one import from running it at once.
import type { Queues } from './queues.js';

export async function enqueueContactBulk(
  queues: Pick<Queues, 'contact-bulk'>,
  kind: 'import' | 'export',
  id: string,
  jobId: string = id,
): Promise<void> {
  await queues['contact-bulk'].add(kind, { kind, id }, { jobId });
}
