import { expect } from 'chai';
import { insertTemplate, publishTemplate, updateTemplateDraft } from '../../shared/db/templates.js';
import { ApiError } from '../../shared/errors.js';
import { resolveTemplate } from '../../shared/templates.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

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
  });
  after(async () => api.close());

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
      await sql.begin((tx) => publishTemplate(tx, orgId, id));
      await updateTemplateDraft(sql, orgId, id, { subject: 'v2 {{name}}' });
      await sql.begin((tx) => publishTemplate(tx, orgId, id));
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
