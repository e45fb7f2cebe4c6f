// A smarthost outage is said in the log (SMARTHOST_UNREACHABLE, repeated while it lasts) and so is
// its end (SMARTHOST_REACHABLE), from the connections the delivery worker's Outbound makes.
import { expect } from 'chai';
import { createServer, type Server } from 'node:net';
import { Writable } from 'node:stream';
import { loadConfig } from '../../shared/config.js';
import { createLogger } from '../../shared/logger.js';
import { Outbound } from '../../shared/mail/outbound/index.js';
import { SmarthostWatch } from '../../shared/mail/outbound/smarthost-watch.js';
import { freePort } from '../helpers/ports.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { lines, logger: createLogger('info', 'test', stream) };
}

const events = (lines: Record<string, unknown>[]) => lines.map((l) => l.event);

describe('smarthost watch', () => {
  it('logs the outage once, again every repeat while it lasts, and its end once', () => {
    const { lines, logger } = capture();
    let t = 0;
    const watch = new SmarthostWatch('relay.example:587', logger, 60_000, () => t);
    watch.reached();
    expect(lines).to.deep.equal([]);
    watch.failed(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    t = 30_000;
    watch.failed(new Error('connect ECONNREFUSED'));
    expect(events(lines)).to.deep.equal(['SMARTHOST_UNREACHABLE']);
    t = 61_000;
    watch.failed(new Error('connect ECONNREFUSED'));
    expect(events(lines)).to.deep.equal(['SMARTHOST_UNREACHABLE', 'SMARTHOST_UNREACHABLE']);
    expect(lines[1]).to.include({ smarthost: 'relay.example:587', failures: 3, since: new Date(0).toISOString() });
    t = 90_000;
    watch.reached();
    watch.reached();
    expect(events(lines)).to.deep.equal(['SMARTHOST_UNREACHABLE', 'SMARTHOST_UNREACHABLE', 'SMARTHOST_REACHABLE']);
    expect(lines[2]).to.include({ failures: 3, downForMs: 90_000 });
  });

  it('logs a flapping smarthost once per repeat at most, and its recovery only after a logged outage', () => {
    const { lines, logger } = capture();
    let t = 0;
    const watch = new SmarthostWatch('relay.example:587', logger, 60_000, () => t);
    for (let i = 0; i < 10; i++) {
      t = i * 5_000;
      watch.failed(new Error('421 too many connections'));
      watch.reached();
    }
    expect(events(lines)).to.deep.equal(['SMARTHOST_UNREACHABLE', 'SMARTHOST_REACHABLE']);
    t = 61_000;
    watch.failed(new Error('421 too many connections'));
    expect(events(lines)).to.have.length(3);
    expect(lines[2]).to.include({ event: 'SMARTHOST_UNREACHABLE', failures: 1 });
  });

  it('is told by Outbound when a smarthost connection fails and when one is made again', async () => {
    const port = await freePort();
    const told: string[] = [];
    const config = loadConfig({ SMTP_SMARTHOST: `smtp://127.0.0.1:${port}`, SECRET_KEY: 'x'.repeat(32) });
    const outbound = new Outbound(config, {
      smarthostWatch: { failed: () => told.push('failed'), reached: () => told.push('reached') },
    });
    const route = await outbound.route('dest.test');
    const message = { from: 'a@acme.test', to: 'b@dest.test', raw: Buffer.from('Subject: x\r\n\r\nx\r\n') };
    const results: string[] = [];
    const after = async (_m: unknown, r: { kind: string }) => void results.push(r.kind);
    await outbound.deliver(route, [message as never], { after: after as never });
    expect(told).to.deep.equal(['failed']);
    expect(results).to.deep.equal(['deferred']);
    // A server that greets: the connection is made.
    const server: Server = createServer((socket) => {
      socket.write('220 relay ESMTP\r\n');
      socket.on('data', (d: Buffer) => {
        const line = d.toString();
        if (/^EHLO/i.test(line)) socket.write('250 relay\r\n');
        else if (/^QUIT/i.test(line)) socket.end('221 bye\r\n');
        else if (/^(MAIL|RCPT|RSET)/i.test(line)) socket.write('250 ok\r\n');
        else socket.write('451 try later\r\n');
      });
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    try {
      await outbound.deliver(route, [message as never], { after: after as never });
      expect(told).to.deep.equal(['failed', 'reached']);
      expect(results).to.deep.equal(['deferred', 'deferred']);
      // The idle connection handed out again is not news.
      await outbound.deliver(route, [message as never], { after: after as never });
      expect(told).to.deep.equal(['failed', 'reached']);
      expect(results).to.have.length(3);
    } finally {
      outbound.close();
      await new Promise((r) => server.close(r));
    }
  });
});
