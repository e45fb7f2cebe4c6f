// TRUST_PROXY (shared/config.ts): behind a reverse proxy the client address comes from
// X-Forwarded-For; without it the header is a client's claim and is ignored. The console records
// the address of each sign-in with the session.
import { expect } from 'chai';
import { ConsoleClient } from '../helpers/console.js';
import { seedOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

describe('TRUST_PROXY', () => {
  async function signInAddress(api: TestApi): Promise<string | null> {
    const org = await seedOrg(api.deps.sql);
    const c = new ConsoleClient(api.url);
    const res = await c.post(
      '/console/login',
      { email: org.user.email, password: org.user.password },
      { csrf: false, headers: { 'x-forwarded-for': '203.0.113.7' } },
    );
    expect(res.status, res.text).to.equal(303);
    const [row] = await api.deps.sql<{ ip: string | null }[]>`
      select s.ip from console_sessions s join users u on u.id = s.user_id where u.email = ${org.user.email}`;
    return row!.ip;
  }

  it('takes the client address from X-Forwarded-For when true', async () => {
    const api = await startApi({ env: { TRUST_PROXY: 'true' } });
    try {
      expect(await signInAddress(api)).to.equal('203.0.113.7');
    } finally {
      await api.close();
    }
  });

  it('ignores X-Forwarded-For by default', async () => {
    const api = await startApi();
    try {
      expect(await signInAddress(api)).to.match(/^(::ffff:)?127\.0\.0\.1$/);
    } finally {
      await api.close();
    }
  });
});
