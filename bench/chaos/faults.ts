// The faults of `npm run chaos`, in the order they run. Each breaks the install and repairs it,
// and resolves with the moment of the repair (the process started again, the service back, the
// receiver answering again): recovery is measured from there. A failover has no repair: it
// resolves with the moment of the kill. The failover faults run last, on a stack of their own.
import { Redis } from 'ioredis';
import type postgres from 'postgres';
import { INBOUND_FAULTS } from './inbound-faults.js';
import type { ChaosStack, Engines } from './stack.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Fault {
  name: string;
  inject(s: ChaosStack, faultMs: number): Promise<number>;
  /** The engines the fault needs (`failover`: a Postgres pair and a Sentinel set); `single` if unset. */
  engines?: Engines;
  /** Recovery must be under this many seconds (RECOVERY_TARGET_SECONDS if unset). */
  recoverWithin?: number;
  /** After the phase's quiet: the fault's own findings (notes under the table) and missed targets. */
  check?(s: ChaosStack, sql: postgres.Sql): Promise<{ notes: string[]; missed: string[] }>;
}

/** SIGKILL, a second of absence, then the process is started again (as a supervisor would). */
function killAndRestart(name: 'worker' | 'web'): Fault['inject'] {
  return async (s) => {
    await s.kill(name);
    await sleep(1000);
    const at = Date.now();
    await s.start(name);
    return at;
  };
}

/** A receiving end that misbehaves for the fault's length, then answers again. */
function forAWhile(set: (s: ChaosStack, on: boolean) => void): Fault['inject'] {
  return async (s, ms) => {
    set(s, true);
    await sleep(ms);
    set(s, false);
    return Date.now();
  };
}

export const FAULTS: Fault[] = [
  { name: 'worker-kill', inject: killAndRestart('worker') },
  { name: 'web-kill', inject: killAndRestart('web') },
  {
    name: 'redis-restart',
    recoverWithin: 10,
    inject: async (s) => {
      await s.redis!.kill();
      await sleep(3000);
      await s.restartRedis();
      return Date.now();
    },
  },
  {
    name: 'redis-flush',
    recoverWithin: 10,
    inject: async (s) => {
      const r = new Redis(s.redis!.url, { lazyConnect: true });
      await r.connect();
      await r.flushall();
      r.disconnect();
      return Date.now();
    },
  },
  {
    name: 'postgres-restart',
    recoverWithin: 10,
    inject: async (s) => {
      await s.pg!.stopImmediate();
      await sleep(3000);
      await s.pg!.start();
      return Date.now();
    },
  },
  { name: 'webhook-500', inject: forAWhile((s, on) => (s.receiver.failing = on)) },
  { name: 'sink-421', inject: forAWhile((s, on) => (s.sink.refusing = on)) },
  // The smarthost closes every connection quiet for 2 s (its idle timeout), for the fault's length.
  {
    name: 'smarthost-idle-close',
    recoverWithin: 10,
    inject: forAWhile((s, on) => (s.sink.idleCloseMs = on ? 2000 : 0)),
  },
  {
    // The smarthost restarts under load: sessions closed (421), 2 s without a listener, back.
    name: 'smarthost-restart',
    recoverWithin: 10,
    inject: async (s) => {
      await s.sink.restart(2000);
      return Date.now();
    },
  },
  ...INBOUND_FAULTS,
  {
    // Measured from the kill: the Sentinels notice the master gone (1 s), elect and promote.
    name: 'sentinel-failover',
    engines: 'failover',
    recoverWithin: 30,
    inject: async (s) => {
      const at = Date.now();
      const old = await s.failover!.sentinels.killMaster();
      await s.failover!.sentinels.waitFailover(old);
      return at;
    },
  },
  {
    // Measured from the kill; the standby is promoted a second later, as a failover manager would.
    name: 'postgres-failover',
    engines: 'failover',
    recoverWithin: 30,
    inject: async (s) => {
      const at = Date.now();
      await s.failover!.pair.killPrimary();
      await sleep(1000);
      await s.failover!.pair.promoteStandby();
      return at;
    },
  },
];
