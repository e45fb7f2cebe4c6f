import { expect } from 'chai';
import { insertTemplate, publishTemplate, updateTemplateDraft } from '../../shared/db/templates.js';
import { ApiError } from '../../shared/errors.js';
import { resolveTemplate } from '../../shared/templates.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

async function rejects422(p: Promise<unknown>, pattern: RegExp): Promise<void> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(ApiError);
    expect((err as ApiError).code).to.equal('validation_error');
    expect((err as ApiError).message).to.match(pattern);
    return;
  }
  expect.fail(`expected a validation_error matching ${pattern}`);
}

describe('templates', () => {
  let api: TestApi;
  let org: SeededOrg;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
  });
  after(async () => api.close());

  describe('HTTP API', () => {
    let send: string;

    before(async () => {
      send = (await org.mint({ permission: 'SEND' })).token;
    });

    const welcome = {
      name: 'Welcome — Ünïcode Mail!',
      subject: 'Hi {{name}}',
      html: '<p>Hello {{name}}, you have {{count}} points</p>',
      text: 'Hello {{name}}',
      from: 'Acme <hello@acme.test>',
      variables: [
        { key: 'name', type: 'string' },
        { key: 'count', type: 'number', fallback_value: 0 },
      ],
    };

    it('creates a template with a slug generated from the name (SEND key)', async () => {
      const res = await api.request('POST', '/templates', { token: send, body: welcome });
      expect(res.status).to.equal(201);
      expect(res.json).to.deep.include({
        object: 'template',
        slug: 'welcome-unicode-mail',
        name: welcome.name,
        subject: welcome.subject,
        html: welcome.html,
        text: welcome.text,
        from: welcome.from,
        published_version: null,
        versions: [],
      });
      expect(res.json.id).to.match(/^tpl_[0-9A-Z]{26}$/);
      expect(res.json.variables).to.deep.equal([
        { key: 'name', type: 'string', fallback_value: null },
        { key: 'count', type: 'number', fallback_value: 0 },
      ]);
      expect(res.json.created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      // Same name again: the generated slug moves on instead of failing.
      const again = await api.request('POST', '/templates', { token: send, body: welcome });
      expect(again.status).to.equal(201);
      expect(again.json.slug).to.equal('welcome-unicode-mail-2');
    });

    it('answers 409 conflict for a given slug that is taken, and frees it on delete', async () => {
      const body = { name: 'Receipt', slug: 'receipt', text: 'Thanks' };
      expect((await api.request('POST', '/templates', { token: send, body })).status).to.equal(201);
      const dup = await api.request('POST', '/templates', { token: send, body });
      expect(dup.status).to.equal(409);
      expect(dup.json.error.code).to.equal('conflict');
      expect(dup.json.error.message).to.contain('receipt');
      const del = await api.request('DELETE', '/templates/receipt', { token: org.key.token });
      expect(del.status).to.equal(200);
      expect(del.json).to.include({ object: 'template', slug: 'receipt', deleted: true });
      expect((await api.request('POST', '/templates', { token: send, body })).status).to.equal(201);
    });

    it('validates the body (422 naming the field)', async () => {
      const cases: [unknown, RegExp][] = [
        [{}, /body\.name is required/],
        [{ name: 'x', slug: 'Bad Slug' }, /body\.slug/],
        [{ name: 'x', html: 5 }, /body\.html must be string/],
        [{ name: 'x', colour: 'red' }, /body\.colour is not a known field/],
        [
          { name: 'x', variables: [{ key: 'a', type: 'date' }] },
          /body\.variables\.0\.type must be one of string, number/,
        ],
        [{ name: 'x', variables: [{ key: '1a', type: 'string' }] }, /body\.variables\.0\.key/],
        [
          { name: 'x', html: '{{#open}}x', variables: [{ key: 'open', type: 'string' }] },
          /body\.html is not a valid template/,
        ],
        [{ name: 'x', html: '{{who}}' }, /body\.html uses the variable "who", which is not declared/],
        [{ name: 'x', text: '{{> partial}}' }, /partials are not supported/],
        [
          { name: 'x', variables: [{ key: 'n', type: 'number', fallback_value: 'one' }] },
          /fallback_value must be a number/,
        ],
      ];
      for (const [body, pattern] of cases) {
        const res = await api.request('POST', '/templates', { token: send, body });
        expect(res.status, JSON.stringify(body)).to.equal(422);
        expect(res.json.error.code).to.equal('validation_error');
        expect(res.json.error.message).to.match(pattern);
      }
      const bad = await api.request('POST', '/templates', {
        token: send,
        raw: '{"name":',
        headers: { 'content-type': 'application/json' },
      });
      expect(bad.status).to.equal(400);
      expect(bad.json.error.code).to.equal('invalid_json');
    });

    it('publishes versions, edits only the draft, and sends use published versions', async () => {
      const created = await api.request('POST', '/templates', { token: send, body: { ...welcome, slug: 'pub' } });
      const id: string = created.json.id;
      const p1 = await api.request('POST', `/templates/${id}/publish`, { token: send });
      expect(p1.status).to.equal(200);
      expect(p1.json.published_version).to.equal(1);
      expect(p1.json.versions.map((v: { version: number }) => v.version)).to.deep.equal([1]);

      const patched = await api.request('PATCH', '/templates/pub', {
        token: send,
        body: { subject: 'Welcome {{name}}!', variables: [...welcome.variables, { key: 'x', type: 'string' }] },
      });
      expect(patched.status).to.equal(200);
      expect(patched.json).to.include({ subject: 'Welcome {{name}}!', published_version: 1 });
      let r = await resolveTemplate(api.deps.sql, org.organization.id, { id: 'pub', variables: { name: 'Ann' } });
      expect(r.subject).to.equal('Hi Ann');
      expect(r.html).to.equal('<p>Hello Ann, you have 0 points</p>');

      const p2 = await api.request('POST', '/templates/pub/publish', { token: send });
      expect(p2.json.published_version).to.equal(2);
      await rejects422(
        resolveTemplate(api.deps.sql, org.organization.id, { id: 'pub', variables: { name: 'Ann' } }),
        /variables\.x is required/,
      );
      r = await resolveTemplate(api.deps.sql, org.organization.id, {
        id,
        variables: { name: 'Ann', x: 'y', count: 7 },
      });
      expect(r.subject).to.equal('Welcome Ann!');
      expect(r.template).to.deep.equal({ id, slug: 'pub', version: 2 });
      r = await resolveTemplate(api.deps.sql, org.organization.id, { id, version: 1, variables: { name: 'Ann' } });
      expect(r.subject).to.equal('Hi Ann');

      const got = await api.request('GET', `/templates/${id}`, { token: send });
      expect(got.json.versions.map((v: { version: number }) => v.version)).to.deep.equal([2, 1]);
    });

    it('makes N+1 and N+2 from concurrent publishes', async () => {
      const created = await api.request('POST', '/templates', { token: send, body: { name: 'Race', text: 'hi' } });
      const results = await Promise.all(
        Array.from({ length: 6 }, () => api.request('POST', `/templates/${created.json.id}/publish`, { token: send })),
      );
      expect(results.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200, 200]);
      const versions = results.map((r) => r.json.published_version as number).sort((a, b) => a - b);
      expect(versions).to.deep.equal([1, 2, 3, 4, 5, 6]);
      const [row] = await api.deps.sql<{ count: number }[]>`
        select count(*)::int as count from template_versions where template_id = ${created.json.id}`;
      expect(row!.count).to.equal(6);
    });

    it('refuses to publish a draft without html or text, and PATCH that breaks the draft', async () => {
      const created = await api.request('POST', '/templates', { token: send, body: { name: 'Empty', subject: 'x' } });
      const res = await api.request('POST', `/templates/${created.json.id}/publish`, { token: send });
      expectError(res, 422, 'validation_error');
      expect(res.json.error.message).to.contain('neither html nor text');
      const patch = await api.request('PATCH', `/templates/${created.json.id}`, {
        token: send,
        body: { html: '<p>{{missing}}</p>' },
      });
      expectError(patch, 422, 'validation_error');
      expect(patch.json.error.message).to.match(/body\.html uses the variable "missing"/);
      const empty = await api.request('PATCH', `/templates/${created.json.id}`, { token: send, body: {} });
      expectError(empty, 422, 'validation_error');
    });

    it('lists newest first with cursor pagination, without deleted templates', async () => {
      const fresh = await seedOrg(api.deps.sql);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await api.request('POST', '/templates', { token: fresh.key.token, body: { name: `T${i}` } });
        ids.push(res.json.id);
      }
      await api.request('DELETE', `/templates/${ids[2]}`, { token: fresh.key.token });
      const page1 = await api.request('GET', '/templates?limit=2', { token: fresh.key.token });
      expect(page1.json.object).to.equal('list');
      expect(page1.json.data.map((t: { id: string }) => t.id)).to.deep.equal([ids[4], ids[3]]);
      expect(page1.json.has_more).to.equal(true);
      const page2 = await api.request('GET', `/templates?limit=2&after=${ids[3]}`, { token: fresh.key.token });
      expect(page2.json.data.map((t: { id: string }) => t.id)).to.deep.equal([ids[1], ids[0]]);
      expect(page2.json.has_more).to.equal(false);
      const back = await api.request('GET', `/templates?limit=5&before=${ids[1]}`, { token: fresh.key.token });
      expect(back.json.data.map((t: { id: string }) => t.id)).to.deep.equal([ids[4], ids[3]]);
      const near = await api.request('GET', `/templates?limit=1&before=${ids[1]}`, { token: fresh.key.token });
      expect(near.json.data.map((t: { id: string }) => t.id)).to.deep.equal([ids[3]]);
      expect(near.json.has_more).to.equal(true);
      const bad = await api.request('GET', '/templates?limit=500', { token: fresh.key.token });
      expectError(bad, 422, 'validation_error');
    });

    it('DELETE needs FULL; deleted and foreign templates are 404 and cannot be sent', async () => {
      const created = await api.request('POST', '/templates', {
        token: send,
        body: { name: 'Gone', slug: 'gone', text: 'x' },
      });
      await api.request('POST', '/templates/gone/publish', { token: send });
      const denied = await api.request('DELETE', '/templates/gone', { token: send });
      expect(denied.status).to.equal(403);
      expect(denied.json.error.code).to.equal('forbidden');
      expect(denied.json.error.message).to.contain('FULL');
      const full = await org.mint({ permission: 'FULL' });
      expect((await api.request('DELETE', '/templates/gone', { token: full.token })).status).to.equal(200);
      expectError(await api.request('GET', `/templates/${created.json.id}`, { token: send }), 404, 'not_found');
      expectError(await api.request('DELETE', '/templates/gone', { token: full.token }), 404, 'not_found');
      expect((await api.request('PATCH', '/templates/gone', { token: send, body: { name: 'y' } })).status).to.equal(
        404,
      );
      expect((await api.request('POST', '/templates/gone/publish', { token: send })).status).to.equal(404);
      await rejects422(resolveTemplate(api.deps.sql, org.organization.id, { id: 'gone' }), /not found/);
      const other = await seedOrg(api.deps.sql);
      const foreign = await api.request('GET', '/templates/pub', { token: other.key.token });
      expect(foreign.status).to.equal(404);
      expect(foreign.json.error.code).to.equal('not_found');
    });
  });

  describe('resolveTemplate', () => {
    let id: string;

    before(async () => {
      const sql = api.deps.sql;
      const orgId = org.organization.id;
      const t = await insertTemplate(sql, {
        orgId,
        slug: 'welcome',
        name: 'Welcome',
        subject: 'Hello {{name}}',
        html: '<p>Hi {{name}}, {{{raw}}}</p>',
        text: 'Hi {{name}}',
        from_address: 'Acme <hello@acme.test>',
        variables: [
          { key: 'name', type: 'string' },
          { key: 'raw', type: 'string', fallback_value: '<i>x</i>' },
        ],
      });
      id = t!.id;
      await sql.begin((tx) => publishTemplate(tx, orgId, id, () => {}));
      await updateTemplateDraft(sql, orgId, id, { subject: 'v2 {{name}}' });
      await sql.begin((tx) => publishTemplate(tx, orgId, id, () => {}));
      await updateTemplateDraft(sql, orgId, id, { subject: 'draft {{name}}' });
    });

    it('renders the latest published version by id or slug, never the draft', async () => {
      for (const ref of [id, 'welcome', 'WELCOME']) {
        const r = await resolveTemplate(api.deps.sql, org.organization.id, { id: ref, variables: { name: 'A&B' } });
        expect(r).to.deep.equal({
          subject: 'v2 A&B',
          html: '<p>Hi A&amp;B, <i>x</i></p>',
          text: 'Hi A&B',
          from: 'Acme <hello@acme.test>',
          template: { id, slug: 'welcome', version: 2 },
        });
      }
    });

    it('renders a pinned version', async () => {
      const r = await resolveTemplate(api.deps.sql, org.organization.id, {
        id: 'welcome',
        version: 1,
        variables: { name: 'Z', raw: 'y' },
      });
      expect(r.subject).to.equal('Hello Z');
      expect(r.template.version).to.equal(1);
    });

    it('answers 422 naming the field for unknown templates, versions and bad variables', async () => {
      const orgId = org.organization.id;
      const sql = api.deps.sql;
      await rejects422(resolveTemplate(sql, orgId, { id: 'nope' }), /^body\.template\.id: template nope not found$/);
      await rejects422(
        resolveTemplate(sql, orgId, { id: 'welcome', version: 9 }),
        /^body\.template\.version:.*no version 9/,
      );
      await rejects422(resolveTemplate(sql, orgId, { id: 'welcome' }), /^body\.template\.variables\.name is required$/);
      await rejects422(
        resolveTemplate(sql, orgId, { id: 'welcome', variables: { name: 3 } }),
        /variables\.name must be a string/,
      );
      const other = await seedOrg(sql);
      await rejects422(resolveTemplate(sql, other.organization.id, { id }), /not found/);
      const never = await insertTemplate(sql, {
        orgId,
        slug: 'never',
        name: 'Never',
        subject: 's',
        html: null,
        text: 't',
        from_address: null,
        variables: [],
      });
      await rejects422(resolveTemplate(sql, orgId, { id: never!.id }), /has no published version/);
    });
  });
});
