import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../shared/config.js';

const SECRET = 's'.repeat(32);

describe('relay settings', () => {
  it('has development-safe defaults', () => {
    const c = loadConfig({ SECRET_KEY: SECRET });
    expect(c).to.deep.include({
      relayPort: 2587,
      relayMaxBytes: 40 * 1024 * 1024,
      relayTlsCert: null,
      relayTlsKey: null,
      relayTlsPort: null,
      relayAllowInsecureAuth: false,
    });
  });

  it('reads every relay variable', () => {
    const c = loadConfig({
      SECRET_KEY: SECRET,
      RELAY_MAX_BYTES: '1048576',
      RELAY_TLS_CERT: '/etc/tern/cert.pem',
      RELAY_TLS_KEY: '/etc/tern/key.pem',
      RELAY_TLS_PORT: '2465',
      RELAY_ALLOW_INSECURE_AUTH: 'true',
    });
    expect(c).to.deep.include({
      relayMaxBytes: 1048576,
      relayTlsCert: '/etc/tern/cert.pem',
      relayTlsKey: '/etc/tern/key.pem',
      relayTlsPort: 2465,
      relayAllowInsecureAuth: true,
    });
  });

  it('refuses bad values, naming the variable', () => {
    const bad: [Record<string, string>, string][] = [
      [{ RELAY_MAX_BYTES: '-1' }, 'RELAY_MAX_BYTES'],
      [{ RELAY_MAX_BYTES: '10MB' }, 'RELAY_MAX_BYTES'],
      [{ RELAY_TLS_PORT: 'smtps' }, 'RELAY_TLS_PORT'],
      [{ RELAY_ALLOW_INSECURE_AUTH: 'maybe' }, 'RELAY_ALLOW_INSECURE_AUTH'],
      [{ RELAY_TLS_CERT: '/c.pem' }, 'RELAY_TLS_KEY'],
      [{ RELAY_TLS_KEY: '/k.pem' }, 'RELAY_TLS_CERT'],
    ];
    for (const [env, variable] of bad) {
      let err: unknown;
      try {
        loadConfig({ SECRET_KEY: SECRET, ...env });
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(env)).to.be.instanceOf(ConfigError);
      expect((err as ConfigError).variable).to.equal(variable);
    }
  });
});
