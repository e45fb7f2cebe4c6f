// The delivery job of a canceled email, removed by the API's cancel and by the console's.
import { deliveryQueue } from '../../shared/queues.js';
import type { Stream } from '../../shared/streams.js';
import type { ApiContext } from '../types.js';

/** Removes the job of a canceled email; a job that cannot be removed finds the email canceled. */
export async function dropJob(ctx: ApiContext, email: { id: string; stream: Stream }): Promise<void> {
  const emailId = email.id;
  try {
    const job = await deliveryQueue(ctx.deps.queues, email.stream).getJob(emailId);
    if (job) await job.remove();
  } catch (err) {
    ctx.state.log.warn({ event: 'EMAIL_CANCEL_JOB_FAILED', err, emailId }, 'delivery job of a canceled email kept');
  }
}
