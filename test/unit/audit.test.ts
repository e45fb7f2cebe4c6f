// The audit table (shared/audit.ts) covers every changing route an ADMIN or FULL key may call,
// and a row's detail keeps field names and plain values, never a secret-named field.
import { expect } from 'chai';
import { AUDIT_ACTIONS, auditDetail } from '../../shared/audit.js';
import { ROUTES, routeId } from '../../shared/permissions.js';

describe('audit table', () => {
  it('names an action for every non-GET route of tier FULL or ADMIN, and only for known routes', () => {
    const ids = new Set(ROUTES.map(routeId));
    // An alias (Resend's path) records its route's action, as the audit middleware looks it up.
    const missing = ROUTES.filter((r) => r.method !== 'GET' && (r.tier === 'FULL' || r.tier === 'ADMIN'))
      .map((r) => r.aliasOf ?? routeId(r))
      .filter((id) => !AUDIT_ACTIONS[id]);
    expect(missing, 'routes without an audit action').to.deep.equal([]);
    for (const id of Object.keys(AUDIT_ACTIONS)) expect(ids.has(id), id).to.equal(true);
    for (const a of Object.values(AUDIT_ACTIONS)) expect(a.action).to.match(/^[a-z_]+\.[a-z_]+$/);
  });

  it('keeps field names, drops secret-named fields and structured values', () => {
    const d = auditDetail(
      { name: 'ci', permission: 'SEND', token: 'tern_live_x', signing_secret: 'whsec_x', password: 'p' },
      { permission: 'SEND', secret: 'x', api_key: 'y', nested: { token: 'z' }, ids: ['a', 'b'] },
    );
    expect(d).to.deep.equal({ fields: ['name', 'permission'], permission: 'SEND', ids: ['a', 'b'] });
    expect(JSON.stringify(d)).not.to.match(/tern_live_|whsec_/);
  });
});
