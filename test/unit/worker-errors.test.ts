// A worker's 'error' events (workers/worker-errors.ts): the first of a run is logged, then at most
// one line per period, which counts the ones it did not log; a Redis outage no longer floods the log.
import { EventEmitter } from 'node:events';
import { expect } from 'chai';
import { pino } from 'pino';
import { logWorkerErrors } from '../../workers/worker-errors.js';

describe('worker error logging', () => {
  it('logs the first error, then one line per period with how many were not logged', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
    const worker = new EventEmitter();
    logWorkerErrors(worker, logger, 'TEST_WORKER_ERROR', { stream: 'transactional' }, 200);
    for (let i = 0; i < 150; i++) worker.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ level: 50, event: 'TEST_WORKER_ERROR', stream: 'transactional' });
    expect(lines[0]!.unlogged).to.equal(undefined);
    await new Promise((r) => setTimeout(r, 250));
    worker.emit('error', new Error('Missing lock for job 1'));
    expect(lines).to.have.length(2);
    expect(lines[1]).to.include({ event: 'TEST_WORKER_ERROR', unlogged: 149 });
    expect((lines[1]!.err as { message: string }).message).to.equal('Missing lock for job 1');
  });
});
