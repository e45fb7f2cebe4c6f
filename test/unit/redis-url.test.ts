// The Redis Cluster form of REDIS_URL and the hash tags of the keys used together on a cluster.
import { expect } from 'chai';
import { redactUrl } from '../../api/cli/command.js';
import { ConfigError, loadToolConfig } from '../../shared/config.js';
import { redisKeys } from '../../shared/redis-keys.js';
import { isClusterUrl, parseClusterUrl } from '../../shared/redis-url.js';

/** The hash slot's key part, as Redis Cluster picks it: the first non-empty `{…}`, else the key. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
}

describe('Redis Cluster URLs and keys', () => {
  it('parses redis+cluster:// seeds, credentials and TLS', () => {
    expect(parseClusterUrl('redis://127.0.0.1:6379')).to.equal(null);
    expect(parseClusterUrl('redis+cluster://10.0.0.1:7000,10.0.0.2:7001,[::1]:7002')).to.deep.equal({
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      tls: false,
    });
    expect(parseClusterUrl('rediss+cluster://tern:s%40cret@r1.internal:6379/')).to.deep.equal({
      nodes: [{ host: 'r1.internal', port: 6379 }],
      username: 'tern',
      password: 's@cret',
      tls: true,
    });
    expect(() => parseClusterUrl('redis+cluster://r1.internal')).to.throw(/host:port/);
    expect(() => parseClusterUrl('redis+cluster://')).to.throw(/redis\+cluster:/);
    expect(isClusterUrl('REDIS+CLUSTER://a:1')).to.equal(true);
    expect(redactUrl('redis+cluster://tern:s3cret@a:7000,b:7001')).to.equal('redis+cluster://tern:***@a:7000,b:7001');
  });

  it('REDIS_URL accepts the cluster form and names itself on a bad one; DATABASE_POOLER is checked', () => {
    expect(loadToolConfig({ REDIS_URL: 'redis+cluster://a:7000,b:7001' }).redisUrl).to.equal(
      'redis+cluster://a:7000,b:7001',
    );
    expect(() => loadToolConfig({ REDIS_URL: 'redis+cluster://a' }))
      .to.throw(ConfigError)
      .with.property('message')
      .that.matches(/REDIS_URL/);
    expect(loadToolConfig({ DATABASE_POOLER: 'transaction' }).databasePooler).to.equal('transaction');
    expect(() => loadToolConfig({ DATABASE_POOLER: 'statement' }))
      .to.throw(ConfigError)
      .with.property('message')
      .that.matches(/DATABASE_POOLER/);
  });

  it('on a cluster, every queue shares one slot and the webhook leases another; a single Redis keeps plain names', () => {
    const c = redisKeys('tern', { cluster: true });
    const queueKeys = ['delivery', 'webhook-delivery', 'metrics'].map((q) => `${c.bullPrefix}:${q}:wait`);
    expect(new Set(queueKeys.map(hashTag))).to.deep.equal(new Set(['bull']));
    expect(hashTag(c.webhookSlots('wh_1'))).to.equal(hashTag(c.webhookSlots('wh_2')));
    expect(hashTag(c.rateLimit('key_1'))).to.not.equal(hashTag(c.rateLimit('key_2')));
    const single = redisKeys('tern');
    expect(single.bullPrefix).to.equal('tern:bull');
    expect(single.webhookSlots('wh_1')).to.equal('tern:whslots:wh_1');
  });
});
