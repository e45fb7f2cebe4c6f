// Tern's Postgres pool against servers that misbehave during start-up, played by fake servers on
// loopback: a server that accepts and closes cleanly after the startup message (a Postgres being
// restarted or promoted), and a hot standby still in recovery under target_session_attrs=read-write.
// The first query on the connection must settle with an error, never wait for ever while the
// client reconnects in a loop (porsager/postgres#1193, patched in .patches/postgres+3.4.9.patch).
import { expect } from 'chai';
import net from 'node:net';
import { createPool, type Sql } from '../../shared/db/pool.js';
import { waitFor } from '../helpers/wait.js';

interface FakeServer {
  port: number;
  accepts: number;
  /** Protocol message types received after the startup message ('Q', 'P', 'X'…). */
  messages: string[];
  close(): Promise<void>;
}

/** A message of the backend protocol: type byte, length, body. */
function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

function parameterStatus(name: string, value: string): Buffer {
  return message('S', Buffer.from(`${name}\0${value}\0`));
}

/** Ready for query: authentication ok, the reported parameters, key data, idle. */
function startupAnswer(params: Record<string, string>): Buffer {
  const auth = Buffer.alloc(4); // AuthenticationOk
  const key = Buffer.alloc(8);
  key.writeInt32BE(4242, 0);
  return Buffer.concat([
    message('R', auth),
    ...Object.entries(params).map(([k, v]) => parameterStatus(k, v)),
    message('K', key),
    message('Z', Buffer.from('I')),
  ]);
}

/**
 * `answer` undefined: close cleanly as soon as the startup message arrives; otherwise answer it
 * with these reported parameters and record every later message without answering.
 */
async function fakeServer(answer?: Record<string, string>): Promise<FakeServer> {
  const sockets = new Set<net.Socket>();
  const fake = { port: 0, accepts: 0, messages: [] as string[], close: async () => {} };
  const server = net.createServer((s) => {
    fake.accepts++;
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    let started = false;
    s.on('data', (chunk) => {
      if (!answer) return void s.end();
      if (started) return void fake.messages.push(chunk.toString('latin1', 0, 1));
      started = true;
      s.write(startupAnswer(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.port = (server.address() as net.AddressInfo).port;
  fake.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return fake;
}

/** Starts `select 1` and returns a probe of how it settled ('' while pending). */
function settle(sql: Sql): () => string {
  let outcome = '';
  sql`select 1`.then(
    () => (outcome = 'resolved'),
    (e: { code?: string }) => (outcome = `rejected ${e.code}`),
  );
  return () => outcome;
}

describe('Postgres pool against servers closing during start-up', function () {
  this.timeout(60_000);
  const fakes: FakeServer[] = [];
  const pools: Sql[] = [];
  const pool = (url: string) => {
    const sql = createPool(url, { max: 1 });
    pools.push(sql);
    return sql;
  };
  const fake = async (answer?: Record<string, string>) => {
    const f = await fakeServer(answer);
    fakes.push(f);
    return f;
  };

  afterEach(async () => {
    for (const sql of pools.splice(0)) await sql.end({ timeout: 0 }).catch(() => {});
    for (const f of fakes.splice(0)) await f.close();
  });

  it('rejects the query with CONNECTION_CLOSED, reconnecting with backoff meanwhile', async () => {
    const server = await fake();
    const outcome = settle(pool(`postgres://postgres@127.0.0.1:${server.port}/tern`));
    expect(await waitFor('the query to settle', outcome, 30_000)).to.equal('rejected CONNECTION_CLOSED');
    // Without the backoff the client reconnected thousands of times a second.
    expect(server.accepts).to.be.within(1, 100);
  });

  it('rejects it too when every host of a multi-host URL closes during start-up', async () => {
    const [a, b] = [await fake(), await fake()];
    const url = `postgres://postgres@127.0.0.1:${a.port},127.0.0.1:${b.port}/tern?target_session_attrs=read-write`;
    const outcome = settle(pool(url));
    expect(await waitFor('the query to settle', outcome, 30_000)).to.equal('rejected CONNECTION_CLOSED');
    expect(a.accepts + b.accepts).to.be.within(2, 100);
  });

  it('does not send a read-write query to a hot standby in recovery', async () => {
    const standby = await fake({
      server_version: '16.4',
      in_hot_standby: 'on',
      default_transaction_read_only: 'off',
      client_encoding: 'UTF8',
    });
    const outcome = settle(pool(`postgres://postgres@127.0.0.1:${standby.port}/tern?target_session_attrs=read-write`));
    expect(await waitFor('the query to settle', outcome, 30_000)).to.match(/^rejected /);
    expect(standby.messages).to.not.include('Q');
    expect(standby.messages).to.not.include('P');
  });
});
