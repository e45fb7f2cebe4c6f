// The delivery worker's watchdog (issue 11.7): a worker holding jobs with no progress is logged
// (and counted) once per stall, and its recovery is logged.
import { expect } from 'chai';
import { createLogger } from '../../shared/logger.js';
import { ProgressWatchdog } from '../../workers/delivery/watchdog.js';
import { sleep } from '../helpers/wait.js';

describe('delivery progress watchdog', () => {
  it('logs DELIVERY_WORKER_STALLED once per stall, counts stalls, and logs the recovery', async () => {
    const lines: string[] = [];
    const logger = createLogger('info', 'test', { write: (l: string) => void lines.push(l) });
    const dog = new ProgressWatchdog(logger, { stallMs: 30, checkEveryMs: 1_000_000 });
    try {
      const done = dog.started();
      dog.check();
      expect(dog.stalls).to.equal(0);
      await sleep(50);
      dog.check();
      dog.check();
      expect(dog.stalls).to.equal(1);
      expect(lines.filter((l) => l.includes('"event":"DELIVERY_WORKER_STALLED"'))).to.have.length(1);
      done();
      expect(lines.some((l) => l.includes('"event":"DELIVERY_WORKER_RESUMED"'))).to.equal(true);
      // Idle (no job held) is not a stall.
      await sleep(50);
      dog.check();
      expect(dog.stalls).to.equal(1);
    } finally {
      dog.close();
    }
  });
});
