// The delivery queues (DESIGN §14, docs/delivery.md "Streams, priority and fairness"): one BullMQ
// queue per stream, `delivery` for transactional mail and `delivery-broadcast` for broadcast
// mail, each consumed by a worker of its own in every worker process, so a transactional message
// never waits for a slot, a batch or a backlog of broadcast mail.
//
// Within a queue, organizations share the stream fairly through job priorities: a job's priority
// is k, the number of jobs its organization has waiting in that stream when it is added (a Redis
// hash of org → waiting count; a worker decrements it when it takes the job). An organization
// with 100,000 waiting messages holds priorities 1 … 100,000; another organization's single
// message gets 1 and is taken after at most the one job of priority 1 ahead of it. Two busy
// organizations interleave (equal priorities are first in, first out). This is fair queueing by
// waiting count, built from open-source BullMQ features only (priorities), with no dispatcher.
//
// Delayed jobs (scheduled sends, retries) are not counted while they wait for their time: they
// take the organization's current count plus their place in the request, so a scheduled batch
// spreads out instead of sharing one priority. The counters are hints, never a correctness
// matter: a count left high by a job removed unseen only lowers that organization's priority, and
// the delivery sweep clears the counters whenever the queue is empty.
import { Queue, type JobsOptions, type QueueOptions } from 'bullmq';
import type { Redis } from './redis.js';
import { deliveryFairKey } from './redis-keys.js';
import type { Stream } from './streams.js';

/** BullMQ's highest priority number (bullmq/classes/job.ts PRIORITY_LIMIT). */
const PRIORITY_LIMIT = 2 ** 21 - 1;

export interface DeliveryJob {
  emailId: string;
  /** Only these recipients (a retry); all pending recipients when absent. */
  recipientIds?: string[];
  /** The organization and stream the job was queued for (absent on jobs queued before streams). */
  orgId?: string;
  stream?: Stream;
  /** True when the job counts in its organization's waiting count (the worker takes it off). */
  counted?: boolean;
}

/** One message to queue for delivery. */
export interface DeliveryRequest {
  emailId: string;
  orgId: string;
  stream: Stream;
  /** The job id (the email id for a message's first job; see workers/delivery/schedule.ts). */
  jobId: string;
  /** Milliseconds before the job may run (a scheduled send, a retry). */
  delay?: number;
  recipientIds?: string[];
}

/** The BullMQ priority of the k-th waiting job (k ≥ 1) of an organization in a stream's queue. */
export function priorityOf(k: number): number {
  return Math.min(Math.max(1, Math.floor(k)), PRIORITY_LIMIT);
}

/** Takes one off an organization's waiting count; a count that reaches 0 (or below) is removed. */
const TAKE_ONE = `
local v = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if v <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
return v`;

/** The queue of one stream. */
export class DeliveryQueue extends Queue<DeliveryJob> {
  /** The queue's own connection (BullMQ uses the client it is given), for the counters. */
  private readonly redis: Redis;

  constructor(
    name: string,
    readonly stream: Stream,
    opts: QueueOptions & { connection: Redis },
  ) {
    super(name, opts);
    this.redis = opts.connection;
  }

  /** The organizations' waiting counts of this queue's stream. */
  get fairKey(): string {
    return deliveryFairKey(this.qualifiedName, this.stream);
  }

  /**
   * Adds the jobs of `requests` (all of this queue's stream) with their fair priorities (one Redis
   * round trip for the counts).
   */
  async enqueue(requests: DeliveryRequest[], opts: JobsOptions = {}): Promise<void> {
    if (requests.length === 0) return;
    const other = requests.find((r) => r.stream !== this.stream);
    if (other) throw new Error(`a ${other.stream} message cannot join the ${this.stream} queue`);
    const ranks = await this.ranks(requests);
    const jobs = requests.map((r, i) => {
      const counted = !(r.delay && r.delay > 0);
      const data: DeliveryJob = { emailId: r.emailId, orgId: r.orgId, stream: r.stream, counted };
      if (r.recipientIds) data.recipientIds = r.recipientIds;
      return {
        name: 'email',
        data,
        opts: {
          ...opts,
          jobId: r.jobId,
          priority: priorityOf(ranks[i]!),
          ...(r.delay && r.delay > 0 ? { delay: r.delay } : {}),
        },
      };
    });
    if (jobs.length === 1) await this.add(jobs[0]!.name, jobs[0]!.data, jobs[0]!.opts);
    else await this.addBulk(jobs);
  }

  /** Each request's rank k within its organization's waiting jobs of the stream. */
  private async ranks(requests: DeliveryRequest[]): Promise<number[]> {
    const groups = new Map<string, { orgId: string; now: number[]; later: number[] }>();
    requests.forEach((r, i) => {
      let g = groups.get(r.orgId);
      if (!g) groups.set(r.orgId, (g = { orgId: r.orgId, now: [], later: [] }));
      (r.delay && r.delay > 0 ? g.later : g.now).push(i);
    });
    const client = this.redis;
    const list = [...groups.values()];
    let replies: [Error | null, unknown][];
    if (list.length === 1) {
      // The common case (one message, or a batch of one organization): one command, no pipeline.
      const g = list[0]!;
      const reply =
        g.now.length > 0 ? client.hincrby(this.fairKey, g.orgId, g.now.length) : client.hget(this.fairKey, g.orgId);
      replies = [
        await reply.then(
          (v): [null, unknown] => [null, v],
          (err: Error): [Error, null] => [err, null],
        ),
      ];
    } else {
      const multi = client.pipeline();
      for (const g of list) {
        if (g.now.length > 0) multi.hincrby(this.fairKey, g.orgId, g.now.length);
        else multi.hget(this.fairKey, g.orgId);
      }
      replies = (await multi.exec()) ?? [];
    }
    const ranks: number[] = new Array<number>(requests.length).fill(1);
    list.forEach((g, j) => {
      const [err, value] = replies[j] ?? [null, null];
      const count = err ? 0 : Number(value ?? 0) || 0;
      // Counted jobs take the ranks just added (count - n + 1 … count); delayed ones follow the count.
      const base = g.now.length > 0 ? count - g.now.length : count;
      g.now.forEach((idx, n) => (ranks[idx] = base + n + 1));
      g.later.forEach((idx, n) => (ranks[idx] = base + g.now.length + n + 1));
    });
    return ranks;
  }

  /** A worker took the job: it no longer waits (counted jobs only). */
  async taken(job: DeliveryJob): Promise<void> {
    if (!job.counted || !job.orgId) return;
    const client = this.redis;
    await client.eval(TAKE_ONE, 1, this.fairKey, job.orgId);
  }

  /** Jobs waiting to be taken now (not the delayed ones): BullMQ's own counts, never a hint. */
  async waiting(): Promise<number> {
    return await this.getJobCountByTypes('waiting', 'prioritized');
  }

  /** Clears the waiting counts when nothing waits (a count left high by a job removed unseen). */
  async resetCountsIfIdle(): Promise<boolean> {
    const counts = await this.getJobCounts('waiting', 'prioritized');
    if ((counts.waiting ?? 0) + (counts.prioritized ?? 0) > 0) return false;
    const client = this.redis;
    await client.del(this.fairKey);
    return true;
  }
}
