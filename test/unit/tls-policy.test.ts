// What an MTA-STS policy allows of a route (shared/mail/outbound/tls-policy.ts): RFC 8461 §4.1's
// MX matching (a wildcard covers exactly one label) and the targets an `enforce` policy leaves.
import { expect } from 'chai';
import type { StsPolicy } from '../../shared/mail/outbound/mta-sts.js';
import { applyTlsPolicy, mxAllowed } from '../../shared/mail/outbound/tls-policy.js';
import type { Route } from '../../shared/mail/outbound/types.js';

const policy = (mode: StsPolicy['mode'], mx: string[]): StsPolicy => ({
  id: '1',
  mode,
  mx,
  maxAge: 86400,
  expiresAt: Date.now() + 86_400_000,
});

const route = (): Route => ({
  domain: 'example.com',
  mxHosts: ['mx1.example.com', 'backup.other.net'],
  targets: [
    { host: '192.0.2.1', name: 'mx1.example.com', port: 25, secure: false, verifyTls: false },
    { host: '192.0.2.2', name: 'backup.other.net', port: 25, secure: false, verifyTls: false },
  ],
});

describe('MTA-STS policy matching', () => {
  it('matches names exactly and wildcards on one label only', () => {
    expect(mxAllowed('mx1.example.com', ['mx1.example.com'])).to.equal(true);
    expect(mxAllowed('MX1.Example.com.', ['mx1.example.com'])).to.equal(true);
    expect(mxAllowed('mx1.example.com', ['*.example.com'])).to.equal(true);
    expect(mxAllowed('a.mx1.example.com', ['*.example.com'])).to.equal(false);
    expect(mxAllowed('example.com', ['*.example.com'])).to.equal(false);
    expect(mxAllowed('mx1.example.org', ['*.example.com', 'mx1.example.com'])).to.equal(false);
  });

  it('enforce keeps the allowed hosts only, each requiring a verified STARTTLS', () => {
    const r = applyTlsPolicy(route(), policy('enforce', ['*.example.com']));
    expect(r.failure).to.equal(undefined);
    expect(r.targets.map((t) => t.name)).to.deep.equal(['mx1.example.com']);
    expect(r.targets[0]).to.include({ verifyTls: true, requireTls: true });
    expect(r.targets[0]!.tlsPolicy).to.deep.equal({ policy: 'mta-sts', mode: 'enforce' });
  });

  it('enforce with no allowed host is a deferral naming MTA-STS', () => {
    const r = applyTlsPolicy(route(), policy('enforce', ['mx.elsewhere.com']));
    expect(r.targets).to.deep.equal([]);
    expect(r.failure?.kind).to.equal('deferred');
    expect(r.failure?.response).to.include('MTA-STS (enforce) of example.com: no MX host');
  });

  it('testing and none change nothing of how hosts are reached', () => {
    const testing = applyTlsPolicy(route(), policy('testing', ['mx.elsewhere.com']));
    expect(testing.targets.map((t) => [t.name, t.verifyTls, t.requireTls])).to.deep.equal([
      ['mx1.example.com', false, undefined],
      ['backup.other.net', false, undefined],
    ]);
    expect(applyTlsPolicy(route(), policy('none', []))).to.deep.equal(route());
    expect(applyTlsPolicy(route(), null)).to.deep.equal(route());
  });
});
