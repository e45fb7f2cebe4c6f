// The suite's own housekeeping: what a test file leaves in the shared Redis is found, named and
// deleted; the template database is named by sql/'s contents, so every checkout shares it.
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { fromRoot } from '../../shared/paths.js';
import { templateName } from '../helpers/db.js';
import { leftoverKeys, TEST_REDIS_URL, testPrefix } from '../helpers/redis-prefix.js';
import { track } from '../helpers/resources.js';

describe('test suite housekeeping', () => {
  let redis: Redis;
  let closeRedis: () => Promise<void>;

  before(() => {
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    closeRedis = track('redis client', async () => void (await redis.quit()));
  });
  after(async () => closeRedis());

  it('names the keys a test file left under its prefix, with the file, and deletes them', async () => {
    const prefix = testPrefix();
    const clean = testPrefix();
    await redis.set(`${prefix}:rl:key_1`, '1');
    await redis.hset(`${prefix}:bull:delivery:em_1`, 'data', '{}');
    const left = await leftoverKeys([prefix, clean]);
    expect(left).to.have.length(1);
    expect(left[0]).to.match(new RegExp(`^2 keys under ${prefix} \\(e\\.g\\. ${prefix}:`));
    expect(left[0]).to.contain('test/int/test-cleanup.int.test.ts');
    expect(await redis.exists(`${prefix}:rl:key_1`, `${prefix}:bull:delivery:em_1`)).to.equal(0);
    // Checked once: a prefix already checked is not reported again.
    expect(await leftoverKeys([])).to.deep.equal([]);
  });

  it('names the template database by the migrations, not by the checkout path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tern-sql-'));
    try {
      await cp(fromRoot('sql'), join(dir, 'sql'), { recursive: true });
      const here = await templateName();
      expect(here).to.match(/^tern_tpl_[0-9a-f]{16}$/);
      expect(await templateName(join(dir, 'sql'))).to.equal(here);
      await writeFile(join(dir, 'sql', '999999_extra.sql'), 'select 1;\n');
      expect(await templateName(join(dir, 'sql'))).to.not.equal(here);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
