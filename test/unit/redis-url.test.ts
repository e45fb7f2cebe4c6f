// The Redis Cluster and Sentinel forms of REDIS_URL, DATABASE_URL's libpq host list, and the hash
// tags of the keys used together on a cluster.
import { expect } from 'chai';
import { redactUrl } from '../../api/cli/command.js';
import { ConfigError, loadToolConfig } from '../../shared/config.js';
import { redisKeys } from '../../shared/redis-keys.js';
import { databaseName, firstHostUrl, withDatabase } from '../../shared/db/url.js';
import { isClusterUrl, parseClusterUrl, parseSentinelUrl } from '../../shared/redis-url.js';

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

  it('parses redis+sentinel:// Sentinels, master name, db and credentials; REDIS_URL takes it', () => {
    expect(parseSentinelUrl('redis+cluster://a:1')).to.equal(null);
    expect(parseSentinelUrl('redis+sentinel://10.0.0.1:26379,[::1]:26380,s3.internal:26381/tern')).to.deep.equal({
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '::1', port: 26380 },
        { host: 's3.internal', port: 26381 },
      ],
      name: 'tern',
      db: 0,
      tls: false,
    });
    expect(parseSentinelUrl('rediss+sentinel://:s%40cret@a:26379/main?db=2&sentinel_password=x')).to.deep.equal({
      sentinels: [{ host: 'a', port: 26379 }],
      name: 'main',
      db: 2,
      password: 's@cret',
      sentinelPassword: 'x',
      tls: true,
    });
    expect(() => parseSentinelUrl('redis+sentinel://a:26379')).to.throw(/master name/);
    expect(() => parseSentinelUrl('redis+sentinel://a/tern')).to.throw(/host:port/);
    expect(() => parseSentinelUrl('redis+sentinel://a:1/tern?db=x')).to.throw(/db/);
    expect(() => parseSentinelUrl('redis+sentinel://a:1/tern?role=slave')).to.throw(/role/);
    expect(loadToolConfig({ REDIS_URL: 'redis+sentinel://a:1,b:2/tern' }).redisUrl).to.equal(
      'redis+sentinel://a:1,b:2/tern',
    );
    expect(() => loadToolConfig({ REDIS_URL: 'redis+sentinel://a:1' }))
      .to.throw(ConfigError)
      .with.property('message')
      .that.matches(/REDIS_URL/);
    expect(redactUrl('redis+sentinel://:pw@a:1,b:2/tern?sentinel_password=sp')).to.equal(
      'redis+sentinel://:***@a:1,b:2/tern?sentinel_password=***',
    );
  });

  it('DATABASE_URL may list hosts in libpq form; each host is checked', () => {
    const pair = 'postgres://tern:pw@db1:5432,db2:5433/tern?target_session_attrs=read-write';
    expect(loadToolConfig({ DATABASE_URL: pair }).databaseUrl).to.equal(pair);
    expect(() => loadToolConfig({ DATABASE_URL: 'postgres://db1:5432,db2:99999/tern' }))
      .to.throw(ConfigError)
      .with.property('message')
      .that.matches(/DATABASE_URL/);
    expect(() => loadToolConfig({ DATABASE_URL: 'mysql://db1,db2/tern' })).to.throw(ConfigError);
    expect(firstHostUrl(pair)).to.equal('postgres://tern:pw@db1:5432/tern?target_session_attrs=read-write');
    expect(withDatabase(pair, 'postgres')).to.equal(
      'postgres://tern:pw@db1:5432,db2:5433/postgres?target_session_attrs=read-write',
    );
    expect(databaseName(pair)).to.equal('tern');
    expect(redactUrl(pair)).to.equal('postgres://tern:***@db1:5432,db2:5433/tern?target_session_attrs=read-write');
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
