// A model-based test of the outbound connection pool (shared/mail/outbound/pool.ts) against a real
// SMTP server on loopback (test/helpers/smtp-sink.ts). fast-check runs random sequences of:
// acquire (urgent or not, a timeout when every slot is busy), send (accepted, refused midway,
// the connection dropped during DATA), release (reusable or not), an acquire waiting at the cap
// served when a slot frees, the server closing its idle connections and a busy one (a 421 idle
// timeout or a reset), and a whole delivery. After every step the pool's counts (open = busy +
// idle) equal the model's and the connections the server sees; after every sequence a message
// is still delivered.
import { expect } from 'chai';
import fc from 'fast-check';
import { ConnectionPool, settle, type PooledConnection } from '../../shared/mail/outbound/pool.js';
import type { Target } from '../../shared/mail/outbound/types.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { waitFor } from '../helpers/wait.js';

const CAP = 2;
/** Short, so that an acquire at the cap costs a fraction of a second. */
const ACQUIRE_TIMEOUT_MS = 150;

interface Held {
  pc: PooledConnection;
  /** The client's port: how the server names this connection. */
  port: number;
  /** Still open, as far as the model knows. */
  alive: boolean;
  /** Its last transaction was refused midway (the pool resets it on release). */
  dirty: boolean;
}

interface Model {
  held: Held[];
  idle: number;
}

interface Real {
  pool: ConnectionPool;
  sink: Sink;
  target: Target;
}

type Cmd = fc.AsyncCommand<Model, Real>;

const busyOf = (m: Model) => m.held.filter((h) => h.alive).length;
const openOf = (m: Model) => busyOf(m) + m.idle;
const portOf = (pc: PooledConnection) => (pc.conn as unknown as { _socket: { localPort: number } })._socket.localPort;
let sent = 0;

/** The pool's counts and the server's connections come to equal the model's (closes travel). */
async function converge(m: Model, r: Real): Promise<void> {
  const expected = { open: openOf(m), busy: busyOf(m), idle: m.idle, waiting: 0 };
  const seen = () => ({ ...r.pool.counts(r.target), server: r.sink.connections.size });
  await waitFor(
    `pool counts ${JSON.stringify(expected)} and ${expected.open} connections at the server`,
    () => {
      const now = seen();
      return JSON.stringify(now) === JSON.stringify({ ...expected, server: expected.open });
    },
    5000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; seen ${JSON.stringify(seen())}`);
  });
}

/** Sends one message on `pc`; resolves with the error when the server did not accept it. */
async function send(pc: PooledConnection, to: string): Promise<Error | null> {
  const id = ++sent;
  const raw = Buffer.from(`Subject: model ${id}\r\nMessage-ID: <model-${id}@pool.test>\r\n\r\nbody\r\n`);
  try {
    await settle<unknown>(pc, (cb) =>
      pc.conn.send({ from: 'b@pool.test', to: [to] }, raw, (err, info) => cb(err ?? null, info)),
    );
    return null;
  } catch (err) {
    return err as Error;
  }
}

async function acquire(m: Model, r: Real, urgent: boolean): Promise<void> {
  if (openOf(m) >= CAP && m.idle === 0) {
    const err = await r.pool.acquire(r.target, null, urgent).then(
      () => null,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.code, 'an acquire with every slot busy times out').to.equal('EPOOLTIMEOUT');
    return;
  }
  const reuse = m.idle > 0;
  const pc = await r.pool.acquire(r.target, null, urgent);
  expect(pc.reused, 'an idle connection is reused before a new one is opened').to.equal(reuse);
  if (reuse) m.idle--;
  m.held.push({ pc, port: portOf(pc), alive: true, dirty: false });
}

/** What a release leaves: an open reusable connection goes idle (reset first when dirty). */
async function release(m: Model, r: Real, h: Held, reusable: boolean): Promise<void> {
  m.held.splice(m.held.indexOf(h), 1);
  await r.pool.release(h.pc, reusable, h.dirty);
  if (h.alive && reusable) m.idle++;
}

/** A whole delivery: acquire, send, release for reuse; the message reaches the server. */
async function deliver(m: Model, r: Real): Promise<void> {
  const before = r.sink.received.length;
  await acquire(m, r, false);
  const h = m.held.at(-1)!;
  expect(await send(h.pc, 'ok@dest.test'), 'a delivery').to.equal(null);
  await release(m, r, h, true);
  expect(r.sink.received.length).to.equal(before + 1);
}

const pick = (m: Model, i: number) => m.held[i % m.held.length]!;

function command(name: string, check: (m: Model) => boolean, run: (m: Model, r: Real) => Promise<void>): Cmd {
  return {
    check,
    toString: () => name,
    async run(m, r) {
      await run(m, r);
      await converge(m, r);
    },
  };
}

const commands = [
  fc.boolean().map((urgent) =>
    command(
      `acquire(${urgent ? 'urgent' : ''})`,
      () => true,
      (m, r) => acquire(m, r, urgent),
    ),
  ),
  fc.tuple(fc.nat(), fc.constantFrom('accepted', 'refused', 'dropped during DATA')).map(([i, how]) =>
    command(
      `send(${i}, ${how})`,
      // The pool's callers send on a connection whose last transaction was refused only after
      // its release resets it (RSET): without one the server answers the next MAIL FROM 503.
      (m) => m.held.some((h) => h.alive && !h.dirty),
      async (m, r) => {
        const alive = m.held.filter((h) => h.alive && !h.dirty);
        const h = alive[i % alive.length]!;
        if (how === 'dropped during DATA') r.sink.dropOnData = true;
        const err = await send(h.pc, how === 'refused' ? 'refused@dest.test' : 'ok@dest.test');
        if (how === 'accepted') expect(err, 'an open connection delivers').to.equal(null);
        else expect(err, `a message ${how} is an error`).to.not.equal(null);
        if (how === 'refused') h.dirty = true;
        else if (how === 'accepted') h.dirty = false;
        else h.alive = false;
      },
    ),
  ),
  fc.tuple(fc.nat(), fc.boolean()).map(([i, reusable]) =>
    command(
      `release(${i}, ${reusable ? 'reusable' : 'broken'})`,
      (m) => m.held.length > 0,
      (m, r) => release(m, r, pick(m, i), reusable),
    ),
  ),
  fc.tuple(fc.nat(), fc.constantFrom('release', 'server closes it')).map(([i, how]) =>
    command(
      `acquire waiting at the cap, then ${how}(${i})`,
      (m) => m.idle === 0 && busyOf(m) === CAP,
      async (m, r) => {
        const alive = m.held.filter((x) => x.alive);
        const h = alive[i % alive.length]!;
        const waiting = r.pool.acquire(r.target);
        await waitFor('the acquire to wait', () => r.pool.counts(r.target).waiting === 1);
        if (how === 'release') await release(m, r, h, true);
        else {
          h.alive = false;
          r.sink.closeConnections('timeout', (port) => port === h.port);
        }
        const pc = await waiting;
        if (pc.reused) m.idle--;
        m.held.push({ pc, port: portOf(pc), alive: true, dirty: false });
      },
    ),
  ),
  fc.constantFrom('timeout' as const, 'reset' as const).map((how) =>
    command(
      `server closes idle (${how})`,
      () => true,
      async (m, r) => {
        const held = new Set(m.held.filter((h) => h.alive).map((h) => h.port));
        r.sink.closeConnections(how, (port) => !held.has(port));
        m.idle = 0;
      },
    ),
  ),
  fc.tuple(fc.nat(), fc.constantFrom('timeout' as const, 'reset' as const)).map(([i, how]) =>
    command(
      `server closes busy(${i}, ${how})`,
      // The pool's callers send on a connection whose last transaction was refused only after
      // its release resets it (RSET): without one the server answers the next MAIL FROM 503.
      (m) => m.held.some((h) => h.alive && !h.dirty),
      async (m, r) => {
        const alive = m.held.filter((h) => h.alive && !h.dirty);
        const h = alive[i % alive.length]!;
        h.alive = false;
        r.sink.closeConnections(how, (port) => port === h.port);
      },
    ),
  ),
  fc.constant(command('deliver', (m) => openOf(m) < CAP || m.idle > 0, deliver)),
];

describe('outbound connection pool: model-based, against a real SMTP server', function () {
  this.timeout(180_000);
  let sink: Sink;

  before(async () => {
    const refuse = (rcpt: string) =>
      rcpt.startsWith('refused@') ? { code: 550, message: '5.1.1 no such user' } : null;
    sink = await startSink(refuse, { disabledCommands: ['AUTH', 'STARTTLS'] });
  });
  after(() => sink.close());

  it('keeps open = busy + idle equal to the connections the server has, and always delivers the next message', async () => {
    const target = { host: '127.0.0.1', port: sink.port, secure: false, verifyTls: false } as Target;
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
        const pool = new ConnectionPool(CAP, 'pool.test', ACQUIRE_TIMEOUT_MS);
        const model: Model = { held: [], idle: 0 };
        const real: Real = { pool, sink, target };
        try {
          await fc.asyncModelRun(() => ({ model, real }), cmds);
          // Whatever happened, every held connection goes back and the next message is delivered.
          for (const h of [...model.held]) await release(model, real, h, true);
          await converge(model, real);
          await deliver(model, real);
          await converge(model, real);
        } finally {
          for (const h of model.held) await pool.release(h.pc, false);
          pool.close();
          sink.closeConnections('reset');
          sink.dropOnData = false;
        }
      }),
      {
        numRuns: Number(process.env.FUZZ_RUNS ?? 40),
        ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}),
      },
    );
  });
});
