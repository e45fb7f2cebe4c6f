import { expect } from 'chai';
import { outboundCheck } from '../../api/cli/doctor/outbound.js';
import { loadToolConfig } from '../../shared/config.js';

describe('tern doctor: outbound SMTP', () => {
  const config = loadToolConfig({ DNS_SERVERS: '10.0.0.53' });

  it('points a failed MX look-up at DNS_SERVERS, not at port 25', () => {
    const check = outboundCheck(config, {
      mode: 'direct',
      ok: false,
      target: 'gmail.com',
      detail: 'DNS look-up of the MX of gmail.com failed (ENOTFOUND)',
      localAddress: null,
      dnsFailed: true,
    });
    expect(check.status).to.equal('fail');
    expect(check.fix).to.contain('DNS_SERVERS (10.0.0.53)').and.contain('SMTP_SMARTHOST').and.not.contain('port');
  });

  it('names the system resolvers when DNS_SERVERS is unset', () => {
    const check = outboundCheck(loadToolConfig({}), {
      mode: 'direct',
      ok: false,
      target: 'gmail.com',
      detail: 'DNS look-up of the MX of gmail.com failed (ETIMEOUT)',
      localAddress: null,
      dnsFailed: true,
    });
    expect(check.fix).to.contain('/etc/resolv.conf').and.not.contain('DNS_SERVERS ()');
  });

  it('points an MX that does not answer at the outbound port', () => {
    const check = outboundCheck(config, {
      mode: 'direct',
      ok: false,
      target: 'gmail-smtp-in.l.google.com:25',
      detail: 'connect ETIMEDOUT',
      localAddress: '192.0.2.10',
    });
    expect(check.fix).to.contain('open outbound TCP port 25');
  });
});
