// Bounded parsing of received mail. mailparser runs on a worker thread of its own
// (shared/mail/parse-thread.ts) with a memory limit (resourceLimits), one message at a time per
// thread; a parse that passes the time limit ends its thread, a thread that runs out of memory
// ends by itself, and a message that is too large, has too many parts or nests too deeply is
// refused before it is parsed (shared/mail/mime-shape.ts, one pass that skips bodies). Whatever a message does, the caller gets an outcome: parsed, over
// a limit (the message is kept raw and marked, never parsed again), or failed (the parser refused
// it). Threads are started as work comes and end after a minute idle.
import type { Worker } from 'node:worker_threads';
import type { ParsedMail } from 'mailparser';
import type { Config } from '../config.js';
import { newThread } from '../thread.js';
import type { ReadResult } from './dmarc-report.js';
import { mimeShape, type ShapeLimits } from './mime-shape.js';

export interface ParseLimits extends ShapeLimits {
  /** Largest message parsed, in bytes. */
  maxBytes: number;
  /** Longest one parse may take, in milliseconds. */
  timeoutMs: number;
  /** Heap of a parse thread, in MiB (its old generation). */
  memoryMb: number;
}

/** The limits of INBOUND_MAX_BYTES and the INBOUND_PARSE_* settings. */
export function parseLimits(config: Config): ParseLimits {
  return {
    maxBytes: config.inboundMaxBytes,
    maxParts: config.inboundParseMaxParts,
    maxDepth: config.inboundParseMaxDepth,
    timeoutMs: config.inboundParseSeconds * 1000,
    memoryMb: config.inboundParseMemoryMb,
  };
}

export type OverLimit = 'size' | 'parts' | 'depth' | 'time' | 'memory';

export type ToParseThread = { kind: 'mime' | 'dmarc'; raw: Uint8Array; limits: ShapeLimits };

export type FromParseThread =
  | { type: 'ready' }
  | { type: 'parsed'; mail: ParsedMail; dmarc?: ReadResult }
  | { type: 'over'; limit: OverLimit; reason: string }
  | { type: 'failed'; reason: string };

export type ParseOutcome = Exclude<FromParseThread, { type: 'ready' }>;

/**
 * Lines the caller's thread reads of a message's structure before handing it on (a few ms); the
 * parse thread counts the rest of a message that needs more.
 */
const PARENT_SHAPE_LINES = 20_000;

/** A thread idle this long ends (the next message starts another). */
const IDLE_MS = 60_000;

interface Slot {
  thread: Worker;
  /** True once the thread listens; false when it ended first. */
  ready: Promise<boolean>;
  markReady(ok: boolean): void;
  /** The task it runs: where its outcome goes. */
  settle: ((o: ParseOutcome) => void) | null;
  idleTimer: NodeJS.Timeout | null;
}

/** Mail objects cross the thread as plain data: Buffers arrive as Uint8Arrays and are made Buffers again. */
function revive(o: ParseOutcome): ParseOutcome {
  if (o.type !== 'parsed') return o;
  for (const a of o.mail.attachments) {
    const c = a.content as unknown;
    if (c instanceof Uint8Array && !Buffer.isBuffer(c)) a.content = Buffer.from(c.buffer, c.byteOffset, c.byteLength);
  }
  return o;
}

export class ParseThreads {
  private readonly slots = new Set<Slot>();
  private readonly idle: Slot[] = [];
  private readonly waiting: ((slot: Slot) => void)[] = [];
  private closed = false;

  /** `size`: most threads at once (messages beyond it wait for one). */
  constructor(
    private readonly limits: ParseLimits,
    private readonly size: number,
  ) {}

  /** The message parsed (a ParsedMail), or why not. */
  async parseMime(raw: Buffer): Promise<ParseOutcome> {
    return await this.run('mime', raw);
  }

  /** The report mail parsed (without its attachments) and its report read. */
  async readDmarc(raw: Buffer): Promise<ParseOutcome> {
    return await this.run('dmarc', raw);
  }

  private async run(kind: ToParseThread['kind'], raw: Buffer): Promise<ParseOutcome> {
    const { maxBytes, maxParts, maxDepth, timeoutMs } = this.limits;
    if (raw.length > maxBytes) return { type: 'over', limit: 'size', reason: `larger than ${maxBytes} bytes` };
    // Counted here first, a few ms at most: a message of thousands of parts takes no thread.
    const shape = mimeShape(raw, { maxParts, maxDepth }, PARENT_SHAPE_LINES);
    if (shape && !shape.ok) return { type: 'over', limit: shape.limit, reason: shape.reason };
    const slot = await this.take();
    if (!(await slot.ready)) return { type: 'failed', reason: 'the parse thread did not start' };
    return await new Promise<ParseOutcome>((resolve) => {
      const timer = setTimeout(() => {
        this.drop(slot, { type: 'over', limit: 'time', reason: `parsing took longer than ${timeoutMs / 1000} s` });
      }, timeoutMs);
      slot.settle = (o) => {
        clearTimeout(timer);
        slot.settle = null;
        resolve(revive(o));
      };
      slot.thread.postMessage({ kind, raw, limits: { maxParts, maxDepth } } satisfies ToParseThread);
    });
  }

  /** An idle thread, a new one while under `size`, or the next one to become idle. */
  private take(): Promise<Slot> {
    if (this.closed) throw new Error('parse threads closed');
    const slot = this.idle.pop();
    if (slot) {
      if (slot.idleTimer) clearTimeout(slot.idleTimer);
      return Promise.resolve(slot);
    }
    if (this.slots.size < this.size) return Promise.resolve(this.spawn());
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** A thread that finished a task serves the next waiting one, or waits idle. */
  private release(slot: Slot): void {
    const next = this.waiting.shift();
    if (next) return next(slot);
    slot.idleTimer = setTimeout(() => this.drop(slot, null), IDLE_MS);
    slot.idleTimer.unref();
    this.idle.push(slot);
  }

  private spawn(): Slot {
    const thread = newThread(import.meta.url, 'parse-thread', {
      resourceLimits: { maxOldGenerationSizeMb: this.limits.memoryMb, maxYoungGenerationSizeMb: 32 },
    });
    let markReady!: (ok: boolean) => void;
    const ready = new Promise<boolean>((r) => (markReady = r));
    const slot: Slot = { thread, ready, markReady, settle: null, idleTimer: null };
    this.slots.add(slot);
    thread.on('message', (m: FromParseThread) => {
      if (m.type === 'ready') return slot.markReady(true);
      if (!this.slots.has(slot)) return;
      slot.settle?.(m);
      this.release(slot);
    });
    thread.on('error', (err: Error & { code?: string }) => {
      const oom = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.drop(
        slot,
        oom
          ? { type: 'over', limit: 'memory', reason: `parsing needed more than ${this.limits.memoryMb} MiB` }
          : { type: 'failed', reason: `the parse thread failed: ${err.message}` },
      );
    });
    thread.on('exit', () => this.drop(slot, { type: 'failed', reason: 'the parse thread ended' }));
    return slot;
  }

  /** Ends a thread; its task (if any) gets `outcome`, and a waiting task gets a new thread. */
  private drop(slot: Slot, outcome: ParseOutcome | null): void {
    if (!this.slots.delete(slot)) return;
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    const i = this.idle.indexOf(slot);
    if (i !== -1) this.idle.splice(i, 1);
    slot.markReady(false);
    if (outcome) slot.settle?.(outcome);
    void slot.thread.terminate();
    const next = this.waiting.shift();
    if (next && !this.closed) next(this.spawn());
  }

  /** Ends every thread (a task still running gets `failed`). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.slots];
    for (const slot of all) this.drop(slot, { type: 'failed', reason: 'parse threads closed' });
    await Promise.all(all.map((s) => s.thread.terminate()));
  }
}
