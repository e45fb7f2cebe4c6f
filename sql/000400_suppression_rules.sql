-- Suppression rules (DESIGN §16): a row of `suppressions` is either an address (`email`) or a
-- rule (`pattern`, a glob with `*` only: shared/suppression-patterns.ts). A rule is found at send
-- time through an index, never by testing every rule: it is stored with a key made of its domain
-- part (the literal domain, `*.<parent>` for a subdomain rule, `*` for any domain) and the first
-- ≤ 3 literal characters of its local part. An address asks for the few keys a rule matching it
-- can have (suppression_keys: at most 4 per domain level, so 12 for ann@example.com), and
-- `like` settles the candidates those index probes find.
alter table suppressions alter column email drop not null;
alter table suppressions
  add column pattern text,
  add column pattern_key text,
  add column pattern_like text,
  add constraint suppressions_email_or_pattern check ((email is null) <> (pattern is null)),
  add constraint suppressions_pattern_keys check (
    (pattern is null) = (pattern_key is null) and (pattern is null) = (pattern_like is null));
create unique index suppressions_org_pattern_domain_key
  on suppressions (org_id, pattern, coalesce(domain_id, '')) where pattern is not null;
create index suppressions_pattern_key_idx on suppressions (org_id, pattern_key) where pattern is not null;

-- The keys a rule matching `address` (lower case) can have: each of its domain, `*.` + each
-- parent domain and `*`, joined by `|` to each of '' and the first 1, 2 and 3 characters of its
-- local part. ann@mail.example.com → {*|, *|a, *|an, *|ann, mail.example.com|, …, *.com|ann}.
-- plpgsql: a few µs a call, where a set-returning SQL function costs tens.
create function suppression_keys(address text) returns text[]
language plpgsql immutable strict parallel safe as $$
declare
  at_pos int := length(address) - position('@' in reverse(address)) + 1;
  domain text := substr(address, at_pos + 1);
  local_part text := left(address, at_pos - 1);
  p text[] := array['', left(local_part, 1), left(local_part, 2), left(local_part, 3)];
  keys text[] := array['*|', '*|' || p[2], '*|' || p[3], '*|' || p[4],
                       domain || '|', domain || '|' || p[2], domain || '|' || p[3], domain || '|' || p[4]];
  rest text := domain;
  dot int;
begin
  loop
    dot := position('.' in rest);
    exit when dot = 0;
    rest := substr(rest, dot + 1);
    keys := keys || array['*.' || rest || '|', '*.' || rest || '|' || p[2],
                          '*.' || rest || '|' || p[3], '*.' || rest || '|' || p[4]];
  end loop;
  return keys;
end
$$;

-- The one check of the delivery path: the reason of a suppression that blocks `address` (lower
-- case) for a send of `org` from `domain_id` (null: org-wide rows only), by an address row or a
-- rule, org-wide or for that domain; null when none does. Address rows are looked at first;
-- rules only when the organization has any.
create function suppression_reason(org text, domain_id text, address text) returns text
language sql stable parallel safe as $$
  (select s.reason from suppressions s
   where s.org_id = org and s.email = address
     and (s.domain_id is null or s.domain_id = suppression_reason.domain_id)
   order by s.domain_id nulls first limit 1)
  union all
  (select s.reason from suppressions s
   where s.org_id = org and s.pattern is not null
     and exists (select 1 from suppressions r where r.org_id = org and r.pattern is not null)
     and s.pattern_key = any(suppression_keys(address))
     and address like s.pattern_like
     and (s.domain_id is null or s.domain_id = suppression_reason.domain_id)
   order by s.domain_id nulls first limit 1)
  limit 1
$$;
