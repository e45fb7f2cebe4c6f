// Caps of the SMTP listeners, through raw SMTP sessions: the relay and the MX hold at most
// RELAY_MAX_CLIENTS / MX_MAX_CLIENTS sessions (one more is answered 421 and closed; a slot freed
// is taken again), and an MX transaction takes MX_MAX_RECIPIENTS recipients, answering 452 for
// each further RCPT (RFC 5321 §4.5.3.1.10) while the message goes on to the ones accepted.
import { expect } from 'chai';
import { loadConfig } from '../../shared/config.js';
import { startMx, type TestMx } from '../helpers/mx.js';
import { startRelay } from '../helpers/relay.js';
import { seedOrg } from '../helpers/seed.js';
import { RawSmtp } from '../helpers/smtp-raw.js';
import { startApi, TEST_SECRET_KEY, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

/** Opens `n` sessions that each got a greeting; returns them and their greeting codes. */
async function open(port: number, n: number): Promise<{ clients: RawSmtp[]; codes: number[] }> {
  const clients: RawSmtp[] = [];
  const codes: number[] = [];
  for (let i = 0; i < n; i++) {
    const { client, greeting } = await RawSmtp.open(port);
    clients.push(client);
    codes.push(greeting.code);
  }
  return { clients, codes };
}

/** Once a slot is free again, a new session is greeted with 220 (the 421 ones close at once). */
async function greetedAgain(port: number): Promise<RawSmtp> {
  return await waitFor('a session greeted with 220', async () => {
    const { client, greeting } = await RawSmtp.open(port);
    if (greeting.code === 220) return client;
    await client.close();
    return null;
  });
}

describe('SMTP listener caps', () => {
  let api: TestApi;

  before(async () => {
    api = await startApi({ env: { MX_MAX_CLIENTS: '2' } });
    await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
  });
  after(async () => {
    await api.close();
  });

  it('the MX holds MX_MAX_CLIENTS sessions; one more is answered 421', async () => {
    const mx: TestMx = await startMx(api);
    try {
      const { clients, codes } = await open(mx.port, 3);
      expect(codes).to.deep.equal([220, 220, 421]);
      await clients[0]!.close();
      const again = await greetedAgain(mx.port);
      for (const c of [again, ...clients.slice(1)]) await c.close();
    } finally {
      await mx.close();
    }
  });

  it('the relay holds RELAY_MAX_CLIENTS sessions; one more is answered 421', async () => {
    const relay = await startRelay(api, { relayMaxClients: 2 });
    try {
      const { clients, codes } = await open(relay.port, 3);
      expect(codes).to.deep.equal([220, 220, 421]);
      await clients[1]!.close();
      const again = await greetedAgain(relay.port);
      for (const c of [again, clients[0]!, clients[2]!]) await c.close();
    } finally {
      await relay.close();
    }
  });

  it('an MX transaction takes MX_MAX_RECIPIENTS recipients and answers 452 for the rest', async () => {
    const mx = await startMx(api);
    try {
      const { client, greeting } = await RawSmtp.open(mx.port);
      expect(greeting.code).to.equal(220);
      expect((await client.cmd('EHLO client.example.net')).code).to.equal(250);
      expect((await client.cmd('MAIL FROM:<someone@example.net>')).code).to.equal(250);
      const codes: number[] = [];
      for (let i = 0; i < 103; i++) codes.push((await client.cmd(`RCPT TO:<u${i}@reply.acme.test>`)).code);
      expect(codes.slice(0, 100).every((c) => c === 250)).to.equal(true);
      expect(codes.slice(100)).to.deep.equal([452, 452, 452]);
      const data = await client.data('From: someone@example.net\r\nSubject: many\r\n\r\nhello\r\n');
      expect(data.code, data.text).to.equal(250);
      // The next transaction of the session starts counting again.
      expect((await client.cmd('MAIL FROM:<someone@example.net>')).code).to.equal(250);
      expect((await client.cmd('RCPT TO:<u100@reply.acme.test>')).code).to.equal(250);
      await client.close();
    } finally {
      await mx.close();
    }
  });

  it('refuses an MX_MAX_RECIPIENTS below the 100 RFC 5321 requires, naming the variable', () => {
    const env = { SECRET_KEY: TEST_SECRET_KEY, MX_MAX_RECIPIENTS: '99' };
    expect(() => loadConfig(env)).to.throw(/MX_MAX_RECIPIENTS.*≥ 100/);
    expect(loadConfig({ ...env, MX_MAX_RECIPIENTS: '500' }).mxMaxRecipients).to.equal(500);
  });
});
