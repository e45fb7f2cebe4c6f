// The names a blocklist zone is asked and what its answers mean (shared/reputation/dnsbl.ts).
import { expect } from 'chai';
import { judgeAnswer, queryName } from '../../shared/reputation/dnsbl.js';

describe('DNS blocklist look-ups', () => {
  it('asks IPv4 addresses reversed, IPv6 addresses as reversed nibbles, domains as they are', () => {
    expect(queryName('192.0.2.10', 'zen.spamhaus.org')).to.equal('10.2.0.192.zen.spamhaus.org');
    expect(queryName('2001:db8::1', 'zen.test')).to.equal(
      '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.zen.test',
    );
    expect(queryName('2001:db8:1:2:3:4:5:6', 'z.test')).to.equal(
      '6.0.0.0.5.0.0.0.4.0.0.0.3.0.0.0.2.0.0.0.1.0.0.0.8.b.d.0.1.0.0.2.z.test',
    );
    expect(queryName('Example.COM.', 'dbl.spamhaus.org')).to.equal('example.com.dbl.spamhaus.org');
  });

  it('reads 127/8 as listed, 127.255.255.x and other answers as unknown, no record as clear', () => {
    expect(judgeAnswer(['127.0.0.2'])).to.equal('listed');
    expect(judgeAnswer(['127.0.1.2', '127.0.0.4'])).to.equal('listed');
    expect(judgeAnswer(['127.255.255.254'])).to.equal('unknown');
    expect(judgeAnswer(['127.255.255.252'])).to.equal('unknown');
    expect(judgeAnswer(['203.0.113.7'])).to.equal('unknown');
    expect(judgeAnswer([])).to.equal('clear');
  });
});
