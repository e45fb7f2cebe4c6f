import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../shared/config.js';

function refused(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('config', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c).to.deep.include({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/tern',
      databasePoolMax: 10,
      redisUrl: 'redis://127.0.0.1:6379',
      redisPrefix: 'tern',
      port: 3000,
      baseUrl: 'http://localhost:3000',
      brand: 'tern',
      relayPort: 2587,
      mxPort: 2525,
      smtpSmarthost: null,
      outboundPort: 25,
      dnsServers: [],
      webhookAllowPrivate: false,
      workerQueues: null,
      logLevel: 'info',
      bodyLimitBytes: 1024 * 1024,
      mxHost: 'localhost',
    });
    expect(c.secretKey.length).to.be.at.least(32);
  });

  it('reads good values', () => {
    const c = loadConfig({
      DATABASE_URL: 'postgresql://u:p@db:5433/x',
      REDIS_URL: 'rediss://cache:6380',
      REDIS_PREFIX: 'acme:1',
      PORT: '8080',
      BASE_URL: 'https://mail.example.com/',
      BRAND: 'acme',
      RELAY_PORT: '587',
      MX_PORT: '25',
      SMTP_SMARTHOST: 'smtp://relay.example.com:2525',
      OUTBOUND_PORT: '2526',
      DNS_SERVERS: '127.0.0.1:5353, [::1]:53,8.8.8.8',
      WEBHOOK_ALLOW_PRIVATE: 'yes',
      WORKER_QUEUES: 'delivery, inbound',
      LOG_LEVEL: 'debug',
      BODY_LIMIT_BYTES: '2048',
      SECRET_KEY: 's'.repeat(32),
      MX_HOST: 'mx.example.com',
    });
    expect(c).to.deep.include({
      port: 8080,
      baseUrl: 'https://mail.example.com',
      brand: 'acme',
      redisPrefix: 'acme:1',
      dnsServers: ['127.0.0.1:5353', '[::1]:53', '8.8.8.8'],
      webhookAllowPrivate: true,
      workerQueues: ['delivery', 'inbound'],
      bodyLimitBytes: 2048,
      mxHost: 'mx.example.com',
    });
  });

  it('takes the MX host from BASE_URL and REDIS_PREFIX from BRAND by default', () => {
    const c = loadConfig({ BASE_URL: 'https://tern.example.org', BRAND: 'acme' });
    expect(c.mxHost).to.equal('tern.example.org');
    expect(c.redisPrefix).to.equal('acme');
  });

  const bad: [string, string][] = [
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_URL', 'mysql://db/x'],
    ['DATABASE_POOL_MAX', '0'],
    ['DATABASE_POOL_MAX', '2.5'],
    ['REDIS_URL', 'http://cache'],
    ['REDIS_PREFIX', 'has space'],
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['BASE_URL', 'ftp://x'],
    ['BASE_URL', 'nope'],
    ['BRAND', 'Has-Caps'],
    ['BRAND', 'x'],
    ['RELAY_PORT', '1e3'],
    ['MX_PORT', '99999'],
    ['SMTP_SMARTHOST', 'http://relay'],
    ['OUTBOUND_PORT', 'twenty-five'],
    ['DNS_SERVERS', '1.1.1.1:99999'],
    ['DNS_SERVERS', 'a b'],
    ['WEBHOOK_ALLOW_PRIVATE', 'maybe'],
    ['LOG_LEVEL', 'verbose'],
    ['BODY_LIMIT_BYTES', '10'],
    ['BODY_LIMIT_BYTES', '1mb'],
    ['SECRET_KEY', 'short'],
    ['MX_HOST', 'mx host'],
  ];
  for (const [name, value] of bad) {
    it(`refuses ${name}=${JSON.stringify(value)} naming the variable`, () => {
      const err = refused({ [name]: value });
      expect(err.variable).to.equal(name);
      expect(err.message).to.match(new RegExp(`^${name}: `));
    });
  }

  it('requires SECRET_KEY in production', () => {
    const err = refused({ NODE_ENV: 'production' });
    expect(err.variable).to.equal('SECRET_KEY');
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'k'.repeat(40) }).secretKey).to.equal('k'.repeat(40));
  });
});
