// A local authoritative DNS server for tests (dns2, UDP and TCP on one loopback port): serves the
// TXT and MX records a test puts in its zone, NXDOMAIN for unknown names, and never answers the
// names marked silent (a timeout). Point the API at it with DNS_SERVERS=127.0.0.1:<port>.
import { createServer as createTcpProbe } from 'node:net';
import dns2 from 'dns2';
import { track } from './resources.js';

const { Packet } = dns2;

export interface MxAnswer {
  exchange: string;
  priority: number;
}

export interface TestDns {
  port: number;
  server: string;
  /** Replaces the TXT values of a name (each value split into ≤ 255-byte strings on the wire). */
  txt(name: string, values: string[]): void;
  mx(name: string, answers: MxAnswer[]): void;
  /** A records of a name. */
  a(name: string, addresses: string[]): void;
  /** PTR records of a name (`1.0.0.127.in-addr.arpa`). */
  ptr(name: string, names: string[]): void;
  /** Removes every record of a name (it answers NXDOMAIN). */
  remove(name: string): void;
  /** The server never answers this name (the resolver times out). */
  silence(name: string): void;
  /** How many questions about this name (any type) the server received. */
  asked(name: string): number;
  close(): Promise<void>;
}

/** A DNS record of a domain as the API lists it (POST /domains, GET /domains/{id}). */
export interface ApiRecord {
  record: string;
  name: string;
  type: 'TXT' | 'MX';
  value: string;
  priority?: number;
}

/** Publishes in the test zone the records the API asks a domain to publish. */
export function publishRecords(dns: TestDns, records: ApiRecord[]): void {
  for (const r of records) {
    if (r.type === 'TXT') dns.txt(r.name, [r.value]);
    else dns.mx(r.name, [{ exchange: r.value, priority: r.priority! }]);
  }
}

function chunks(value: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < value.length; i += 255) out.push(value.slice(i, i + 255));
  return out.length > 0 ? out : [''];
}

async function freePort(): Promise<number> {
  const probe = createTcpProbe();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export async function startDns(): Promise<TestDns> {
  const txt = new Map<string, string[]>();
  const mx = new Map<string, MxAnswer[]>();
  const a = new Map<string, string[]>();
  const ptr = new Map<string, string[]>();
  const silent = new Set<string>();
  const questions = new Map<string, number>();
  const server = dns2.createServer({
    udp: true,
    tcp: true,
    handle: (request, send) => {
      const [q] = request.questions;
      const name = (q?.name ?? '').toLowerCase().replace(/\.$/, '');
      questions.set(name, (questions.get(name) ?? 0) + 1);
      if (silent.has(name)) return;
      const response = Packet.createResponseFromRequest(request);
      if (!txt.has(name) && !mx.has(name) && !a.has(name) && !ptr.has(name)) {
        response.header.rcode = 3; // NXDOMAIN
      } else if (q?.type === Packet.TYPE.TXT) {
        for (const v of txt.get(name) ?? []) {
          response.answers.push({
            name,
            type: Packet.TYPE.TXT,
            class: Packet.CLASS.IN,
            ttl: 60,
            data: chunks(v),
          } as never);
        }
      } else if (q?.type === Packet.TYPE.A) {
        for (const address of a.get(name) ?? []) {
          response.answers.push({ name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 60, address } as never);
        }
      } else if (q?.type === Packet.TYPE.PTR) {
        for (const domain of ptr.get(name) ?? []) {
          response.answers.push({ name, type: Packet.TYPE.PTR, class: Packet.CLASS.IN, ttl: 60, domain } as never);
        }
      } else if (q?.type === Packet.TYPE.MX) {
        for (const m of mx.get(name) ?? []) {
          response.answers.push({ name, type: Packet.TYPE.MX, class: Packet.CLASS.IN, ttl: 60, ...m } as never);
        }
      }
      // An answer that cannot be sent shows in the test as a DNS time-out; it must not end the
      // test process as an unhandled rejection.
      send(response).catch(() => {});
    },
  });
  let port: number;
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await server.listen({ udp: { port, address: '127.0.0.1' }, tcp: { port, address: '127.0.0.1' } });
      break;
    } catch (err) {
      if (attempt >= 5) throw err;
    }
  }
  const close = track(`dns 127.0.0.1:${port}`, async () => {
    await server.close();
  });
  return {
    port,
    server: `127.0.0.1:${port}`,
    txt: (name, values) => void txt.set(name.toLowerCase(), values),
    mx: (name, answers) => void mx.set(name.toLowerCase(), answers),
    a: (name, addresses) => void a.set(name.toLowerCase(), addresses),
    ptr: (name, names) => void ptr.set(name.toLowerCase(), names),
    remove: (name) => {
      for (const m of [txt, mx, a, ptr]) m.delete(name.toLowerCase());
    },
    silence: (name) => void silent.add(name.toLowerCase()),
    asked: (name) => questions.get(name.toLowerCase()) ?? 0,
    close,
  };
}
