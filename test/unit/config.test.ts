import { expect } from 'chai';
import { ConfigError, loadConfig, loadToolConfig } from '../../shared/config.js';

const SECRET = 's'.repeat(32);

function refused(
  env: Record<string, string>,
  load: (env: Record<string, string>) => unknown = loadConfig,
): ConfigError {
  try {
    load(env);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('config', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({ SECRET_KEY: SECRET });
    expect(c).to.deep.include({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/tern',
      databasePoolMax: 10,
      databasePooler: 'none',
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
      secretKey: SECRET,
      trustProxy: false,
      domainRecheckHours: 6,
    });
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
      SECRET_KEY: SECRET,
      MX_HOST: 'mx.example.com',
      TRUST_PROXY: 'true',
      DOMAIN_RECHECK_HOURS: '0.5',
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
      trustProxy: true,
      domainRecheckHours: 0.5,
    });
    expect(loadConfig({ SECRET_KEY: SECRET, DOMAIN_RECHECK_HOURS: '0' }).domainRecheckHours).to.equal(0);
  });

  it('takes the MX host from BASE_URL and REDIS_PREFIX from BRAND by default', () => {
    const c = loadConfig({ SECRET_KEY: SECRET, BASE_URL: 'https://tern.example.org', BRAND: 'acme' });
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
    ['TRUST_PROXY', 'maybe'],
    ['MX_HOST', 'mx host'],
    ['DOMAIN_RECHECK_HOURS', '-1'],
    ['DOMAIN_RECHECK_HOURS', 'six'],
  ];
  for (const [name, value] of bad) {
    it(`refuses ${name}=${JSON.stringify(value)} naming the variable`, () => {
      const err = refused({ SECRET_KEY: SECRET, [name]: value });
      expect(err.variable).to.equal(name);
      expect(err.message).to.match(new RegExp(`^${name}: `));
    });
  }

  it('requires SECRET_KEY whatever NODE_ENV says, and has no default for it', () => {
    const envs: Record<string, string>[] = [
      {},
      { NODE_ENV: 'development' },
      { NODE_ENV: 'production' },
      { SECRET_KEY: '' },
    ];
    for (const env of envs) {
      const err = refused(env);
      expect(err.variable, JSON.stringify(env)).to.equal('SECRET_KEY');
      expect(err.message).to.match(/^SECRET_KEY: is required: 32 or more random characters/);
    }
    expect(loadConfig({ SECRET_KEY: 'k'.repeat(40) }).secretKey).to.equal('k'.repeat(40));
  });

  it('reads everything but the secret for the tools (tern, npm start), checking SECRET_KEY only when set', () => {
    const c = loadToolConfig({ PORT: '8080' });
    expect(c.port).to.equal(8080);
    expect(c).to.not.have.property('secretKey');
    expect(refused({ SECRET_KEY: 'short' }, loadToolConfig).variable).to.equal('SECRET_KEY');
  });
});
