-- DMARC aggregate reports (RFC 7489 §7.2, appendix C) received at dmarc@bounces.<domain>, the
-- `rua` address of the DMARC record Tern suggests. One row per report (a reporter sends one per
-- domain and period; a re-sent report is stored once), one row per record of the report.

create table dmarc_reports (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  domain_id text not null references domains (id) on delete cascade,
  inbound_id text references inbound_messages (id) on delete set null,
  reporter_name text not null,
  reporter_email text,
  report_id text not null,
  begin_at timestamptz not null,
  end_at timestamptz not null,
  -- policy_published as the reporter saw it: {domain, p, sp, adkim, aspf, pct}
  policy jsonb not null default '{}',
  messages bigint not null,
  created_at timestamptz not null default now()
);
create unique index dmarc_reports_key on dmarc_reports (domain_id, reporter_name, report_id);
create index dmarc_reports_domain_end_idx on dmarc_reports (domain_id, end_at);

create table dmarc_records (
  report_id text not null references dmarc_reports (id) on delete cascade,
  position integer not null,
  source_ip text not null,
  messages bigint not null,
  disposition text not null check (disposition in ('none', 'quarantine', 'reject')),
  -- policy_evaluated: the DMARC-aligned results
  dkim_aligned boolean not null,
  spf_aligned boolean not null,
  header_from text,
  envelope_from text,
  -- auth_results: {dkim: [{domain, selector, result}], spf: [{domain, scope, result}]}
  auth jsonb not null default '{}',
  primary key (report_id, position)
);

-- The DMARC record Tern suggests asks for aggregate reports at the bounce subdomain (whose MX
-- already points at this install). Domains added before keep their records; their untouched
-- suggestion gains the `rua` tag.
update domains d set records = (
  select jsonb_agg(
           case when r ->> 'record' = 'DMARC' and r ->> 'value' = 'v=DMARC1; p=none;'
                then jsonb_set(r, '{value}', to_jsonb('v=DMARC1; p=none; rua=mailto:dmarc@bounces.' || d.name || ';'))
                else r end
           order by ord)
  from jsonb_array_elements(d.records) with ordinality as t(r, ord))
where jsonb_typeof(d.records) = 'array' and jsonb_array_length(d.records) > 0;
