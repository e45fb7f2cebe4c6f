import { expect } from 'chai';
import { isSealed, SecretBox, UnknownSecretKeyError } from '../../shared/secrets.js';

const OLD = 'old-secret-key-0123456789abcdefghijklmnopqrstuv';
const NEW = 'new-secret-key-0123456789abcdefghijklmnopqrstuv';

describe('secret box (secrets at rest)', () => {
  it('seals to v1:<kid>:<iv>:<ct>:<tag>, a fresh iv each time, and opens what it sealed', () => {
    const box = new SecretBox(NEW);
    const a = box.seal('whsec_abc', 'webhook-secret');
    const b = box.seal('whsec_abc', 'webhook-secret');
    expect(a).to.match(/^v1:[0-9a-f]{8}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+:[A-Za-z0-9_-]{22}$/);
    expect(a).not.to.equal(b);
    expect(a.split(':')[1]).to.equal(box.kid);
    expect(isSealed(a)).to.equal(true);
    expect(box.open(a, 'webhook-secret')).to.equal('whsec_abc');
    expect(box.isCurrent(a)).to.equal(true);
  });

  it('reads a value stored before sealing as it is', () => {
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
    expect(isSealed(pem)).to.equal(false);
    expect(new SecretBox(NEW).open(pem, 'dkim-key')).to.equal(pem);
  });

  it('refuses a value moved to another purpose, or altered', () => {
    const box = new SecretBox(NEW);
    const sealed = box.seal('whsec_abc', 'webhook-secret');
    expect(() => box.open(sealed, 'dkim-key')).to.throw();
    const parts = sealed.split(':');
    parts[3] = parts[3]!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
    expect(() => box.open(parts.join(':'), 'webhook-secret')).to.throw();
  });

  it('opens the previous key’s values during a rotation, and names an unknown key', () => {
    const old = new SecretBox(OLD).seal('whsec_old', 'webhook-secret');
    const rotating = new SecretBox(NEW, OLD);
    expect(rotating.open(old, 'webhook-secret')).to.equal('whsec_old');
    expect(rotating.isCurrent(old)).to.equal(false);
    expect(() => new SecretBox(NEW).open(old, 'webhook-secret')).to.throw(UnknownSecretKeyError, /SECRET_KEY_PREVIOUS/);
  });
});
