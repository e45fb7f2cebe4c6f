// Content for the console's content, audience and settings pages: a template (published once, with a
// variable), contacts, a segment, a sent test broadcast, an automation and a received reply in a
// thread, all made through the API (the reply is stored as the inbound worker stores one). Returns
// the pages to check as [screenshot name, path] and the ids.
import { expect } from 'chai';
import { newId } from '../../shared/ids.js';
import { seedEmail } from './webhook-seed.js';
import type { SeededOrg } from './seed.js';
import type { TestApi } from './stack.js';

export interface SeededContent {
  pages: [string, string][];
  templateId: string;
  broadcastId: string;
  inboundId: string;
  emailId: string;
}

export async function seedContent(api: TestApi, org: SeededOrg): Promise<SeededContent> {
  const token = org.key.token;
  const post = async (path: string, body: Record<string, unknown>) => {
    const res = await api.request('POST', path, { token, body });
    expect(res.status, `${path}: ${res.text}`).to.be.oneOf([200, 201, 202]);
    return res.json as { id: string };
  };
  const tpl = await post('/templates', {
    name: 'Welcome',
    subject: 'Welcome, {{first_name}}',
    html: '<h1 style="font-family:sans-serif">Hello {{first_name}}</h1><p>Your plan: {{plan}}</p>',
    text: 'Hello {{first_name}}',
    variables: [
      { key: 'first_name', type: 'string' },
      { key: 'plan', type: 'string', fallback_value: 'free' },
    ],
  });
  await post(`/templates/${tpl.id}/publish`, {});
  for (const [email, first, plan] of [
    ['ann@dest.test', 'Ann', 'pro'],
    ['bob@dest.test', 'Bob', 'free'],
    ['cid@dest.test', 'Cid', 'pro'],
  ] as const) {
    await post('/contacts', { email, first_name: first, properties: { plan } });
  }
  const seg = await post('/segments', {
    name: 'Pro plan',
    filter: { field: 'properties.plan', op: 'eq', value: 'pro' },
  });
  const bc = await post('/broadcasts', {
    name: 'November news',
    from: 'Acme <news@acme.test>',
    subject: 'What is new',
    html: '<p>News</p>',
    segment_id: seg.id,
  });
  const aut = await post('/automations', {
    name: 'Onboarding',
    trigger: { contact_created: true },
    steps: [{ wait: '2h' }, { send: { template: 'welcome', from: 'Acme <hello@acme.test>' } }],
  });
  const email = await seedEmail(api.deps.sql, {
    orgId: org.organization.id,
    domainId: org.domains['acme.test']!.id,
    to: ['ann@dest.test'],
    subject: 'Your order',
  });
  const inboundIds: string[] = [];
  for (const [i, text] of ['Thanks, got it!', 'One more question: <when> does it ship?'].entries()) {
    const id = newId('inb');
    inboundIds.push(id);
    await api.deps.sql`
      insert into inbound_messages (id, org_id, domain_id, source, kind, mail_from, rcpt_to, raw, size, status,
        from_address, to_addresses, subject, text, email_id, created_at, processed_at)
      values (${id}, ${org.organization.id}, ${org.domains['acme.test']!.id}, 'mx', 'reply', 'ann@dest.test',
        ${['reply@reply.acme.test']}, ${Buffer.from('x')}, 1, 'processed', 'Ann <ann@dest.test>',
        ${['reply@reply.acme.test']}, 'Re: Your order', ${text}, ${email.id}, now() + make_interval(secs => ${i}), now())`;
  }
  return {
    templateId: tpl.id,
    broadcastId: bc.id,
    inboundId: inboundIds[1]!,
    emailId: email.id,
    pages: [
      ['templates', '/console/templates'],
      ['template', `/console/templates/${tpl.id}`],
      ['template-version', `/console/templates/${tpl.id}/versions/1`],
      ['broadcasts', '/console/broadcasts'],
      ['broadcast', `/console/broadcasts/${bc.id}`],
      ['contacts', '/console/contacts'],
      ['segments', '/console/segments'],
      ['segment', `/console/segments/${seg.id}`],
      ['automations', '/console/automations'],
      ['automation', `/console/automations/${aut.id}`],
      ['inbound', '/console/inbound'],
      ['inbound-message', `/console/inbound/${inboundIds[1]!}`],
      ['settings', '/console/settings'],
    ],
  };
}
