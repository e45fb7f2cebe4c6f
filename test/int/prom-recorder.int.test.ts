// The recorder behind GET /metrics (shared/prom/recorder.ts) on a private Redis: increments and
// observations reach the hash as counters and per-bucket counts; through a Redis outage a flush
// fails, logs PROMETHEUS_FLUSH_FAILED once, keeps what it could not write, and the next flush
// after Redis is back writes all of it (nothing lost, nothing twice).
import { expect } from 'chai';
import { startPrivateRedis, type PrivateRedis } from '../../bench/lib/private-services.js';
import { createLogger } from '../../shared/logger.js';
import { PromRecorder, readRecorded } from '../../shared/prom/recorder.js';
import { closeRedis, createRedis, waitReady, type Redis } from '../../shared/redis.js';
import { track } from '../helpers/resources.js';
import { waitFor } from '../helpers/wait.js';

const KEY = 'recorder-test:prom';

describe('PromRecorder', function () {
  this.timeout(30_000);
  let redis: PrivateRedis;
  let client: Redis;
  let cleanup: () => Promise<void>;
  const lines: string[] = [];

  before(async () => {
    redis = await startPrivateRedis({ persist: true });
    client = createRedis(redis.url, 'api', 'recorder-test');
    cleanup = track('private Redis', async () => {
      await closeRedis(client);
      await redis.destroy();
    });
    expect(await waitReady(client, 5000)).to.equal(true);
  });

  after(async () => cleanup?.());

  it('adds counters and histogram buckets to one hash, and reads them back', async () => {
    const rec = new PromRecorder(client, KEY, createLogger('silent', 'test'));
    rec.inc('tern_rate_limited_total', ['api']);
    rec.inc('tern_rate_limited_total', ['api'], 2);
    rec.inc('tern_emails_accepted_total', ['batch', 'transactional'], 5);
    for (const s of [0.0005, 0.003, 0.003, 42])
      rec.observe('tern_http_request_duration_seconds', ['/x', 'GET', '200'], s);
    await rec.flush();
    const stored = await readRecorded(client, KEY);
    expect(stored.get('tern_rate_limited_total')!.get('["api"]')!.value).to.equal(3);
    expect(stored.get('tern_emails_accepted_total')!.get('["batch","transactional"]')!.value).to.equal(5);
    const h = stored.get('tern_http_request_duration_seconds')!.get('["/x","GET","200"]')!;
    expect(h.value).to.equal(4);
    expect(h.sum).to.be.closeTo(42.0065, 1e-9);
    expect(Object.fromEntries(h.buckets!)).to.deep.equal({ '0.001': 1, '0.005': 2, '+Inf': 1 });
    await rec.close();
  });

  it('keeps what a flush could not write through a Redis outage, and writes it once Redis is back', async () => {
    const logger = createLogger('info', 'test', { write: (l: string) => void lines.push(l) });
    const rec = new PromRecorder(client, `${KEY}:outage`, logger);
    rec.inc('tern_smtp_sessions_total', ['mx'], 3);
    await rec.flush();
    await redis.kill();
    rec.inc('tern_smtp_sessions_total', ['mx'], 4);
    rec.observe('tern_delivery_latency_seconds', ['broadcast'], 7);
    let failures = 0;
    for (let i = 0; i < 3; i++) await rec.flush().catch(() => failures++);
    expect(failures).to.equal(3);
    expect(lines.filter((l) => l.includes('"event":"PROMETHEUS_FLUSH_FAILED"'))).to.have.length(1);
    rec.inc('tern_smtp_sessions_total', ['mx']);
    await redis.start();
    await waitFor('a flush after Redis is back', () =>
      rec.flush().then(
        () => true,
        () => false,
      ),
    );
    const stored = await readRecorded(client, `${KEY}:outage`);
    expect(stored.get('tern_smtp_sessions_total')!.get('["mx"]')!.value).to.equal(8);
    const latency = stored.get('tern_delivery_latency_seconds')!.get('["broadcast"]')!;
    expect([latency.value, latency.sum, latency.buckets!.get('10')]).to.deep.equal([1, 7, 1]);
    expect(lines.some((l) => l.includes('"event":"PROMETHEUS_FLUSH_RECOVERED"'))).to.equal(true);
    await rec.close();
  });
});
