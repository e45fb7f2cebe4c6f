import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { isForbiddenAddress, resolverLookup } from '../../shared/webhooks/ssrf.js';
import { track } from '../helpers/resources.js';
import { seedEmail, seedEvent } from '../helpers/webhook-seed.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { waitFor } from '../helpers/wait.js';

// dns2 ships no types; the tiny part used here is typed by hand.
interface Dns2 {
  Packet: {
    TYPE: { A: number; AAAA: number };
    CLASS: { IN: number };
    createResponseFromRequest(req: unknown): { answers: unknown[] };
  };
  createServer(o: {
    udp: boolean;
    handle: (req: { questions: { name: string; type: number }[] }, send: (r: unknown) => void) => void;
  }): {
    listen(o: { udp: { port: number; address: string } }): Promise<void>;
    addresses(): { udp: { port: number } };
    close(): Promise<void>;
  };
}
const dns2 = createRequire(import.meta.url)('dns2') as Dns2;

const RECORDS: Record<string, string> = {
  'loopback.hooks.test': '127.0.0.1',
  'metadata.hooks.test': '169.254.169.254',
  'sixtofour.hooks.test': '2002:7f00:1::1',
  'translated.hooks.test': '::ffff:0:7f00:1',
};

describe('webhook SSRF guard', () => {
  let s: WebhookStack;
  let tcp: Server;
  let connections = 0;
  let dnsPort = 0;
  let closeDns: () => Promise<void>;
  let closeTcp: () => Promise<void>;

  before(async () => {
    const dnsServer = dns2.createServer({
      udp: true,
      handle: (req, send) => {
        const res = dns2.Packet.createResponseFromRequest(req);
        const name = req.questions[0]?.name ?? '';
        const address = RECORDS[name];
        const type = address?.includes(':') ? dns2.Packet.TYPE.AAAA : dns2.Packet.TYPE.A;
        if (address && req.questions[0]!.type === type)
          res.answers.push({ name, type, class: dns2.Packet.CLASS.IN, ttl: 60, address });
        send(res);
      },
    });
    await dnsServer.listen({ udp: { port: 0, address: '127.0.0.1' } });
    dnsPort = dnsServer.addresses().udp.port;
    closeDns = track('dns2 server', () => dnsServer.close());
    // A plain TCP listener stands where the webhook would land: it must never see a connection.
    tcp = createServer((sock) => {
      connections++;
      sock.destroy();
    });
    tcp.listen(0, '127.0.0.1');
    await new Promise<void>((r) => tcp.once('listening', r));
    closeTcp = track('ssrf tcp', () => new Promise<void>((r) => tcp.close(() => r())));
    s = await startWebhookStack({
      workers: true,
      env: { WEBHOOK_ALLOW_PRIVATE: 'false' },
      // Retries an hour apart: a refused address must fail the delivery at once, not wait for them.
      delivery: { schedule: [3_600_000, 3_600_000], lookup: resolverLookup([`127.0.0.1:${dnsPort}`]) },
    });
  });
  after(async () => {
    await s.close();
    await closeTcp();
    await closeDns();
  });

  it('classifies private, loopback, link-local, CGNAT, multicast, metadata, mapped, translated and 6to4 addresses', () => {
    for (const a of [
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '127.0.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '224.0.0.1',
      '0.0.0.0',
      '0.1.2.3',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:a9fe:a9fe',
      '::ffff:10.0.0.1',
      'ff02::1',
      '::7f00:1',
      '::a00:1',
      '64:ff9b::a00:1',
      '64:ff9b:1::a00:1',
      '2002:7f00:1::1', // 6to4 around 127.0.0.1
      '2002:a9fe:a9fe::', // 6to4 around the metadata address
      '2002:808:808::1', // 6to4 around a public address: the whole range is refused
      '::ffff:0:7f00:1', // IPv4-translated
      '::ffff:0:8.8.8.8',
      '0:0:0:0:0:ffff:7f00:0001', // mapped, written in full
      '0000::ffff:10.0.0.1',
    ]) {
      expect(isForbiddenAddress(a), a).to.equal(true);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8', '2001:4860::8888']) {
      expect(isForbiddenAddress(a), a).to.equal(false);
    }
  });

  for (const host of Object.keys(RECORDS)) {
    it(`refuses ${host} (resolves to ${RECORDS[host]}) at connect time and records an SSRF error`, async () => {
      // Inserted directly: the API would accept the name (it is public-looking); the guard must stop it.
      const [wh] = await s.api.deps.sql<{ id: string }[]>`
        insert into webhooks (id, org_id, url, events, signing_secret)
        values (${`wh_${host.split('.')[0]!.toUpperCase().padEnd(26, '0')}`}, ${s.org.organization.id},
          ${`https://${host}:${(tcp.address() as AddressInfo).port}/hook`}, ${['email.sent']}, 'whsec_x')
        returning id`;
      const email = await seedEmail(s.api.deps.sql, {
        orgId: s.org.organization.id,
        domainId: s.org.domains['acme.test']!.id,
      });
      await s.publish([(await seedEvent(s.api.deps.sql, email, 'email.sent', 'ann@example.com')).id]);
      const [d] = await waitFor(
        'failed delivery',
        async () => {
          const rows = await s.api.deps.sql<
            { status: string; last_error: string; attempts: number; next_attempt_at: Date | null }[]
          >`
            select status, last_error, attempts, next_attempt_at from webhook_deliveries
            where webhook_id = ${wh!.id} and status = 'failed'`;
          return rows.length > 0 ? rows : null;
        },
        15_000,
      );
      expect(d!.last_error).to.match(/^ssrf: refused to connect to/);
      expect(d!.attempts).to.equal(1);
      expect(d!.next_attempt_at).to.equal(null);
      expect(d!.last_error).to.contain(RECORDS[host]);
      expect(connections).to.equal(0);
    });
  }
});
