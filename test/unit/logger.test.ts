import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createLogger } from '../../shared/logger.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, logger: createLogger('info', 'test', stream) };
}

describe('logger redaction', () => {
  it('never writes tokens, passwords, secrets, DKIM keys or Authorization headers', () => {
    const { lines, logger } = capture();
    const secrets = ['tern_live_SECRET1', 'hunter2pw', 'whsec_SECRET3', 'PRIVATE-KEY-4', 'Bearer tern_live_SECRET5'];
    logger.info({ token: secrets[0], password: secrets[1] }, 'top level');
    logger.info({ key: { token: secrets[0] }, user: { password: secrets[1] } }, 'nested');
    logger.info({ webhook: { signing_secret: secrets[2] }, domain: { dkim_private_key: secrets[3] } }, 'records');
    logger.info({ dkim: { privateKey: secrets[3] } }, 'signer options');
    logger.info({ req: { headers: { authorization: secrets[4] } } }, 'request');
    logger.info({ headers: { authorization: secrets[4] } }, 'headers');
    expect(lines).to.have.length(6);
    for (const line of lines) {
      for (const s of secrets) expect(line).to.not.include(s);
      expect(line).to.include('[Redacted]');
    }
  });
});
