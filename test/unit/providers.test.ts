import { expect } from 'chai';
import { PROVIDERS, providerLabel, providerOf } from '../../shared/mail/providers.js';

describe('providerOf', () => {
  const byDomain: [string, string][] = [
    ['gmail.com', 'gmail'],
    ['GoogleMail.com', 'gmail'],
    ['outlook.com', 'outlook'],
    ['hotmail.com', 'outlook'],
    ['hotmail.co.uk', 'outlook'],
    ['hotmail.fr', 'outlook'],
    ['live.com', 'outlook'],
    ['msn.com', 'outlook'],
    ['yahoo.com', 'yahoo'],
    ['yahoo.co.jp', 'yahoo'],
    ['ymail.com', 'yahoo'],
    ['aol.com', 'yahoo'],
    ['icloud.com', 'apple'],
    ['me.com', 'apple'],
    ['mac.com', 'apple'],
    ['proton.me', 'proton'],
    ['protonmail.com', 'proton'],
    ['gmx.de', 'gmx'],
    ['gmx.net', 'gmx'],
    ['yandex.ru', 'yandex'],
    ['yandex.com.tr', 'yandex'],
    ['zoho.com', 'zoho'],
    ['fastmail.com', 'fastmail'],
    ['web.de', 'other'],
    ['example.com', 'other'],
  ];
  for (const [domain, id] of byDomain) {
    it(`${domain} → ${id}`, () => {
      expect(providerOf(domain, []).id).to.equal(id);
    });
  }

  const byMx: [string[], string][] = [
    [['aspmx.l.google.com', 'alt1.aspmx.l.google.com'], 'gmail'],
    [['smtp.google.com.'], 'gmail'],
    [['aspmx2.googlemail.com'], 'gmail'],
    [['acme-test.mail.protection.outlook.com'], 'outlook'],
    [['mx-biz.mail.am0.yahoodns.net'], 'yahoo'],
    [['mx01.mail.icloud.com'], 'apple'],
    [['mail.protonmail.ch', 'mailsec.protonmail.ch'], 'proton'],
    [['mx00.gmx.net'], 'gmx'],
    [['mx.yandex.net'], 'yandex'],
    [['mx.zoho.eu'], 'zoho'],
    [['in1-smtp.messagingengine.com'], 'fastmail'],
    [['mx.acme.example'], 'other'],
    [[], 'other'],
  ];
  for (const [hosts, id] of byMx) {
    it(`hosted domain with MX ${hosts.join(', ') || '(none)'} → ${id}`, () => {
      expect(providerOf('acme.example', hosts).id).to.equal(id);
    });
  }

  it('takes the first recognised MX host', () => {
    expect(providerOf('acme.example', ['mx.acme.example', 'aspmx.l.google.com']).id).to.equal('gmail');
  });
  it('does not match a look-alike suffix', () => {
    expect(providerOf('acme.example', ['mx.notgoogle.com']).id).to.equal('other');
    expect(providerOf('yahoo.acme.example', []).id).to.equal('other');
  });
  it('the consumer domain wins over its MX', () => {
    expect(providerOf('outlook.com', ['aspmx.l.google.com'])).to.deep.equal({ id: 'outlook', label: 'Outlook' });
  });
});

describe('providerLabel', () => {
  it('names every provider', () => {
    expect(PROVIDERS.map((p) => providerLabel(p.id))).to.deep.equal([
      'Gmail',
      'Outlook',
      'Yahoo',
      'Apple iCloud',
      'Proton Mail',
      'GMX',
      'Yandex',
      'Zoho',
      'Fastmail',
      'Other',
    ]);
  });
  it('reads an unknown id as Other', () => {
    expect(providerLabel('nope')).to.equal('Other');
  });
});
