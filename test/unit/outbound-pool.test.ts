// The outbound connection pool's queue (shared/mail/outbound/pool.ts): when every connection to a
// host is busy, transactional mail (urgent) gets the next free connection before broadcast mail
// that was waiting longer; within a class, first come first served.
import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { ConnectionPool, type PooledConnection } from '../../shared/mail/outbound/pool.js';
import type { Target } from '../../shared/mail/outbound/types.js';

describe('outbound connection pool: urgent mail first', function () {
  this.timeout(20_000);
  let server: SMTPServer;
  let target: Target;

  before(async () => {
    server = new SMTPServer({ authOptional: true, disabledCommands: ['AUTH', 'STARTTLS'], logger: false });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.server.address() as AddressInfo).port;
    target = { host: '127.0.0.1', port, secure: false, verifyTls: false } as Target;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('hands a released connection to the urgent waiter, then to the others in arrival order', async () => {
    const pool = new ConnectionPool(1, 'pool.test');
    try {
      const held = await pool.acquire(target);
      const order: string[] = [];
      const pending = new Map<string, Promise<[string, PooledConnection]>>();
      const wait = (name: string, urgent: boolean) =>
        pending.set(
          name,
          pool.acquire(target, null, urgent).then((pc): [string, PooledConnection] => [name, pc]),
        );
      wait('broadcast 1', false);
      wait('broadcast 2', false);
      wait('transactional', true);
      await new Promise((r) => setTimeout(r, 50));
      await pool.release(held, true, false);
      // Each waiter in turn gets the one connection; it is given back at once.
      while (pending.size > 0) {
        const [name, pc] = await Promise.race(pending.values());
        pending.delete(name);
        order.push(name);
        await pool.release(pc, true, false);
      }
      expect(order).to.deep.equal(['transactional', 'broadcast 1', 'broadcast 2']);
    } finally {
      pool.close();
    }
  });
});
