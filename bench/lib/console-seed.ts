// Seeds one organization with N messages for bench/console, set-based (generate_series; one
// statement per 100,000 messages and their recipients): ids time-sortable like the API's
// (`em_` + the ULID time of created_at), created over the last 90 days, a realistic mix of
// modes, senders, domains, keys, templates, subjects, tags, states and recipients.
import type { Sql } from '../../shared/db/pool.js';

export interface ConsoleSeed {
  orgId: string;
  domainIds: string[];
  keyIds: string[];
  templateIds: string[];
  /** Distinct recipient addresses (user<k>@<provider>). */
  addresses: number;
}

export const PROVIDERS = ['gmail.com', 'yahoo.com', 'outlook.com', 'example.org', 'mail.example.net'];
export const SUBJECTS = ['Your receipt for order', 'Welcome aboard', 'Reset your password', 'Weekly digest', 'Invoice'];
const CHUNK = 100_000;
const SPAN_MS = 90 * 86_400_000;

/** Crockford base32 of a millisecond time, 10 characters: the time part of a ULID. */
const ULID_TIME = `
create or replace function bench_ulid_time(ms bigint) returns text language sql immutable as $$
  select string_agg(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> (5 * (9 - i))) & 31)::int + 1, 1), '' order by i)
  from generate_series(0, 9) as i
$$`;

export async function seedConsoleEmails(sql: Sql, s: ConsoleSeed, total: number): Promise<void> {
  await sql.unsafe(ULID_TIME);
  const now = Date.now();
  for (let start = 0; start < total; start += CHUNK) {
    const end = Math.min(total, start + CHUNK) - 1;
    // i = 0 is the oldest message; created_at rises with i, and so does the id.
    // The pool's 15 s statement timeout is for requests; a seeding statement may take longer.
    await sql.begin(async (tx) => {
      await tx`set local statement_timeout = 0`;
      await tx`
      with e as (
      insert into emails (id, org_id, key_id, domain_id, mode, from_address, from_email, to_addresses, cc_addresses,
                          subject, text, tags, template_id, template_slug, template_version, message_id, status,
                          last_event, last_event_at, scheduled_at, created_at, updated_at)
      select 'em_' || bench_ulid_time(ms) || lpad(upper(to_hex(i)), 16, '0'), ${s.orgId},
             (${s.keyIds}::text[])[1 + i % 3], (${s.domainIds}::text[])[1 + (i / 3) % 4],
             case when i % 20 = 7 then 'test' else 'live' end,
             'Acme <' || sender || '>', sender,
             case when i % 10 = 3 then array['user' || (i % ${s.addresses}) || '@' || provider,
                                             'user' || ((i * 7) % ${s.addresses}) || '@' || provider]
                  else array['User ' || (i % ${s.addresses}) || ' <user' || (i % ${s.addresses}) || '@' || provider || '>'] end,
             case when i % 50 = 0 then array['audit' || (i % 100) || '@example.org'] else '{}' end,
             (${SUBJECTS}::text[])[1 + i % 5] || case when i % 5 in (0, 4) then ' ' || i else '' end,
             'Hello',
             case when i % 5 = 0 then jsonb_build_array(jsonb_build_object('name', 'order', 'value', i::text))
                  when i % 5 = 3 then '[{"name": "campaign", "value": "weekly"}]'::jsonb else '[]'::jsonb end,
             case when i % 5 = 0 then (${s.templateIds}::text[])[1] when i % 20 = 1 then (${s.templateIds}::text[])[2] end,
             case when i % 5 = 0 then 'receipt' when i % 20 = 1 then 'welcome' end,
             case when i % 5 = 0 or i % 20 = 1 then 1 end,
             'em_' || i || '@bench', st.status, st.last_event, created_at + interval '2 seconds',
             case when st.status = 'scheduled' then created_at + interval '1 day' end, created_at, created_at
      from (select i, ${now - SPAN_MS}::bigint + (i::bigint * ${Math.floor(SPAN_MS / total)}) as ms,
                   'billing' || (i % 5) || '@a.bench.test' as sender,
                   (${PROVIDERS}::text[])[1 + (i / 7) % 5] as provider
            from generate_series(${start}::int, ${end}::int) as i) g
      cross join lateral (select to_timestamp(g.ms / 1000.0) as created_at) t
      cross join lateral (select case
             when i % 200 = 11 then 'scheduled' when i % 100 = 13 then 'failed' when i % 100 = 17 then 'queued'
             else 'sent' end as status,
           case when i % 100 = 13 or i % 200 = 11 or i % 100 = 17 then null
                when i % 50 = 19 then 'email.bounced' when i % 50 = 23 then 'email.delivery_delayed'
                when i % 10 = 9 then 'email.opened' else 'email.delivered' end as last_event) st
      returning id, org_id, to_addresses, cc_addresses, status)
      insert into email_recipients (id, email_id, org_id, field, address, email, domain, status)
      select 'rcp_' || substr(e.id, 4) || '_' || r.n || r.field, e.id, e.org_id, r.field, r.address,
             lower(coalesce(substring(r.address from '<([^>]+)>'), r.address)),
             split_part(lower(coalesce(substring(r.address from '<([^>]+)>'), r.address)), '@', 2),
             case when e.status = 'sent' then 'delivered' else e.status end
      from e
      cross join lateral (select 'to' as field, a.address, a.n from unnest(e.to_addresses) with ordinality as a(address, n)
                          union all
                          select 'cc', c.address, c.n from unnest(e.cc_addresses) with ordinality as c(address, n)) r`;
    });
  }
}
