CREATE FUNCTION public.suppression_keys(address text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
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

CREATE FUNCTION public.suppression_reason(org text, domain_id text, address text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
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

CREATE TABLE public.api_key_tokens (
    id text NOT NULL,
    key_id text NOT NULL,
    token_prefix text NOT NULL,
    token_hash text NOT NULL,
    expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT api_key_tokens_token_hash_check CHECK ((token_hash ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT api_key_tokens_token_prefix_check CHECK ((length(token_prefix) = 12))
);

CREATE TABLE public.api_keys (
    id text NOT NULL,
    org_id text NOT NULL,
    name text NOT NULL,
    mode text NOT NULL,
    permission text NOT NULL,
    domain_ids text[] DEFAULT '{}'::text[] NOT NULL,
    created_by text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_check CHECK (((permission <> 'ADMIN'::text) OR (mode = 'live'::text))),
    CONSTRAINT api_keys_mode_check CHECK ((mode = ANY (ARRAY['live'::text, 'test'::text]))),
    CONSTRAINT api_keys_permission_check CHECK ((permission = ANY (ARRAY['SEND'::text, 'FULL'::text, 'ADMIN'::text])))
);

CREATE TABLE public.audit_log (
    id text NOT NULL,
    org_id text NOT NULL,
    actor_type text NOT NULL,
    actor_id text NOT NULL,
    action text NOT NULL,
    target_type text NOT NULL,
    target_id text NOT NULL,
    ip text,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT audit_log_actor_type_check CHECK ((actor_type = ANY (ARRAY['key'::text, 'user'::text])))
);

CREATE TABLE public.automation_run_steps (
    run_id text NOT NULL,
    seq integer NOT NULL,
    step integer NOT NULL,
    step_id text,
    type text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome text NOT NULL,
    next_step integer,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL
);

CREATE TABLE public.automation_runs (
    id text NOT NULL,
    automation_id text NOT NULL,
    org_id text NOT NULL,
    contact_id text NOT NULL,
    occurrence text NOT NULL,
    mode text NOT NULL,
    steps jsonb NOT NULL,
    context jsonb DEFAULT '{}'::jsonb NOT NULL,
    step integer DEFAULT 0 NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    next_at timestamp with time zone,
    email_ids text[] DEFAULT '{}'::text[] NOT NULL,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    step_started_at timestamp with time zone,
    waiting_for text,
    awaited_event_id text,
    exit_reason text,
    CONSTRAINT automation_runs_mode_check CHECK ((mode = ANY (ARRAY['live'::text, 'test'::text]))),
    CONSTRAINT automation_runs_status_check CHECK ((status = ANY (ARRAY['active'::text, 'completed'::text, 'stopped'::text, 'failed'::text, 'exited'::text])))
);

CREATE TABLE public.automations (
    id text NOT NULL,
    org_id text NOT NULL,
    name text NOT NULL,
    trigger_type text NOT NULL,
    trigger_event text,
    steps jsonb NOT NULL,
    status text DEFAULT 'enabled'::text NOT NULL,
    created_by_key_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT automations_check CHECK (((trigger_type = 'event'::text) = (trigger_event IS NOT NULL))),
    CONSTRAINT automations_status_check CHECK ((status = ANY (ARRAY['enabled'::text, 'disabled'::text]))),
    CONSTRAINT automations_trigger_type_check CHECK ((trigger_type = ANY (ARRAY['event'::text, 'contact_created'::text])))
);

CREATE TABLE public.broadcast_recipients (
    broadcast_id text NOT NULL,
    contact_id text NOT NULL,
    email_id text,
    outcome text NOT NULL,
    detail text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT broadcast_recipients_outcome_check CHECK ((outcome = ANY (ARRAY['sent'::text, 'skipped_unsubscribed'::text, 'skipped_suppressed'::text, 'skipped_topic'::text, 'failed'::text])))
);

CREATE TABLE public.broadcasts (
    id text NOT NULL,
    org_id text NOT NULL,
    key_id text,
    mode text NOT NULL,
    domain_id text NOT NULL,
    name text,
    from_address text NOT NULL,
    subject text,
    reply_to text[] DEFAULT '{}'::text[] NOT NULL,
    preview_text text,
    html text,
    text text,
    template_id text,
    template_version integer,
    segment_id text,
    topic_id text,
    kind text,
    status text DEFAULT 'draft'::text NOT NULL,
    scheduled_at timestamp with time zone,
    started_at timestamp with time zone,
    sent_at timestamp with time zone,
    canceled_at timestamp with time zone,
    segment_filter jsonb,
    cursor text,
    count_recipients integer DEFAULT 0 NOT NULL,
    count_sent integer DEFAULT 0 NOT NULL,
    count_skipped_unsubscribed integer DEFAULT 0 NOT NULL,
    count_skipped_suppressed integer DEFAULT 0 NOT NULL,
    count_skipped_topic integer DEFAULT 0 NOT NULL,
    count_failed integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    count_canceled integer DEFAULT 0 NOT NULL,
    CONSTRAINT broadcasts_mode_check CHECK ((mode = ANY (ARRAY['live'::text, 'test'::text]))),
    CONSTRAINT broadcasts_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'scheduled'::text, 'sending'::text, 'sent'::text, 'canceled'::text])))
);

CREATE TABLE public.console_sessions (
    id_hash text NOT NULL,
    user_id text NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    ip text,
    user_agent text
);

CREATE TABLE public.contact_events (
    id text NOT NULL,
    org_id text NOT NULL,
    contact_id text NOT NULL,
    name text NOT NULL,
    properties jsonb DEFAULT '{}'::jsonb NOT NULL,
    key_id text,
    mode text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    consumed_at timestamp with time zone,
    CONSTRAINT contact_events_mode_check CHECK ((mode = ANY (ARRAY['live'::text, 'test'::text])))
);

CREATE TABLE public.contact_exports (
    id text NOT NULL,
    org_id text NOT NULL,
    key_id text,
    status text NOT NULL,
    segment_id text,
    segment_filter jsonb,
    rows bigint DEFAULT 0 NOT NULL,
    file_bytes bigint DEFAULT 0 NOT NULL,
    file_chunks integer DEFAULT 0 NOT NULL,
    error text,
    lease_token text,
    lease_until timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    CONSTRAINT contact_exports_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'completed'::text, 'failed'::text])))
);

CREATE TABLE public.contact_import_errors (
    import_id text NOT NULL,
    line bigint NOT NULL,
    email text,
    reason text NOT NULL
);

CREATE TABLE public.contact_imports (
    id text NOT NULL,
    org_id text NOT NULL,
    key_id text,
    status text NOT NULL,
    content_hash text,
    dedupe_key text,
    mapping jsonb NOT NULL,
    trigger_automations boolean NOT NULL,
    file_bytes bigint DEFAULT 0 NOT NULL,
    file_chunks integer DEFAULT 0 NOT NULL,
    total_rows bigint,
    rows bigint DEFAULT 0 NOT NULL,
    created bigint DEFAULT 0 NOT NULL,
    updated bigint DEFAULT 0 NOT NULL,
    skipped bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    suppressed bigint DEFAULT 0 NOT NULL,
    error text,
    lease_token text,
    lease_until timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    completed_at timestamp with time zone,
    CONSTRAINT contact_imports_status_check CHECK ((status = ANY (ARRAY['receiving'::text, 'queued'::text, 'running'::text, 'completed'::text, 'failed'::text])))
);

CREATE TABLE public.contact_topics (
    contact_id text NOT NULL,
    topic_id text NOT NULL,
    subscription text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT contact_topics_subscription_check CHECK ((subscription = ANY (ARRAY['opt_in'::text, 'opt_out'::text])))
);

CREATE TABLE public.contacts (
    id text NOT NULL,
    org_id text NOT NULL,
    email text NOT NULL,
    first_name text,
    last_name text,
    properties jsonb DEFAULT '{}'::jsonb NOT NULL,
    unsubscribed boolean DEFAULT false NOT NULL,
    automations_on_create boolean DEFAULT true NOT NULL,
    created_by_key_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    automations_seen_at timestamp with time zone
);

CREATE TABLE public.dmarc_records (
    report_id text NOT NULL,
    "position" integer NOT NULL,
    source_ip text NOT NULL,
    messages bigint NOT NULL,
    disposition text NOT NULL,
    dkim_aligned boolean NOT NULL,
    spf_aligned boolean NOT NULL,
    header_from text,
    envelope_from text,
    auth jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT dmarc_records_disposition_check CHECK ((disposition = ANY (ARRAY['none'::text, 'quarantine'::text, 'reject'::text])))
);

CREATE TABLE public.dmarc_reports (
    id text NOT NULL,
    org_id text NOT NULL,
    domain_id text NOT NULL,
    inbound_id text,
    reporter_name text NOT NULL,
    reporter_email text,
    report_id text NOT NULL,
    begin_at timestamp with time zone NOT NULL,
    end_at timestamp with time zone NOT NULL,
    policy jsonb DEFAULT '{}'::jsonb NOT NULL,
    messages bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.domains (
    id text NOT NULL,
    org_id text NOT NULL,
    name text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    records jsonb DEFAULT '[]'::jsonb NOT NULL,
    dkim_selector text DEFAULT 'tern'::text NOT NULL,
    dkim_private_key text,
    dkim_public_key text,
    track_opens boolean,
    track_clicks boolean,
    verified_at timestamp with time zone,
    last_checked_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    demo boolean DEFAULT false NOT NULL,
    inbound jsonb DEFAULT '{"routes": [], "enabled": false}'::jsonb NOT NULL,
    warmup boolean DEFAULT true NOT NULL,
    next_check_at timestamp with time zone,
    recheck_failures smallint DEFAULT 0 NOT NULL,
    CONSTRAINT domains_name_check CHECK ((name = lower(name))),
    CONSTRAINT domains_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'verified'::text, 'failed'::text])))
);

CREATE TABLE public.email_attachments (
    email_id text NOT NULL,
    "position" integer NOT NULL,
    filename text NOT NULL,
    content_type text,
    content_id text,
    size integer NOT NULL,
    content bytea NOT NULL
);

CREATE TABLE public.email_raw_messages (
    email_id text NOT NULL,
    recipient_id text,
    raw bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.email_recipients (
    id text NOT NULL,
    email_id text NOT NULL,
    org_id text NOT NULL,
    field text NOT NULL,
    address text NOT NULL,
    email text NOT NULL,
    domain text NOT NULL,
    provider text,
    status text DEFAULT 'queued'::text NOT NULL,
    wait_reason text,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone,
    last_response text,
    last_event text,
    last_event_at timestamp with time zone,
    delivered_at timestamp with time zone,
    opened_at timestamp with time zone,
    clicked_at timestamp with time zone,
    complained_at timestamp with time zone,
    unsubscribed_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    attempt_started_at timestamp with time zone,
    attempt_job text,
    cap_day date,
    attempt_expires_at timestamp with time zone,
    tls jsonb,
    CONSTRAINT email_recipients_field_check CHECK ((field = ANY (ARRAY['to'::text, 'cc'::text, 'bcc'::text]))),
    CONSTRAINT email_recipients_status_check CHECK ((status = ANY (ARRAY['scheduled'::text, 'queued'::text, 'sent'::text, 'delivery_delayed'::text, 'delivered'::text, 'bounced'::text, 'rejected'::text, 'failed'::text, 'canceled'::text])))
);

CREATE TABLE public.emails (
    id text NOT NULL,
    org_id text NOT NULL,
    key_id text,
    domain_id text NOT NULL,
    mode text NOT NULL,
    source text DEFAULT 'api'::text NOT NULL,
    from_address text NOT NULL,
    from_email text NOT NULL,
    to_addresses text[] DEFAULT '{}'::text[] NOT NULL,
    cc_addresses text[] DEFAULT '{}'::text[] NOT NULL,
    bcc_addresses text[] DEFAULT '{}'::text[] NOT NULL,
    reply_to text[] DEFAULT '{}'::text[] NOT NULL,
    subject text DEFAULT ''::text NOT NULL,
    html text,
    text text,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    tags jsonb DEFAULT '[]'::jsonb NOT NULL,
    kind text,
    topic_id text,
    template_id text,
    template_slug text,
    template_version integer,
    message_id text NOT NULL,
    raw_mime bytea,
    status text DEFAULT 'queued'::text NOT NULL,
    scheduled_at timestamp with time zone,
    last_event text,
    last_event_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    envelope_from text,
    stream text DEFAULT 'transactional'::text NOT NULL,
    content_purged_at timestamp with time zone,
    CONSTRAINT emails_mode_check CHECK ((mode = ANY (ARRAY['live'::text, 'test'::text]))),
    CONSTRAINT emails_source_check CHECK ((source = ANY (ARRAY['api'::text, 'smtp'::text, 'broadcast'::text, 'automation'::text, 'forward'::text, 'system'::text]))),
    CONSTRAINT emails_status_check CHECK ((status = ANY (ARRAY['scheduled'::text, 'queued'::text, 'processing'::text, 'sent'::text, 'canceled'::text, 'failed'::text]))),
    CONSTRAINT emails_stream_check CHECK ((stream = ANY (ARRAY['transactional'::text, 'broadcast'::text])))
);

CREATE TABLE public.events (
    id text NOT NULL,
    org_id text NOT NULL,
    mode text NOT NULL,
    type text NOT NULL,
    email_id text,
    recipient_id text,
    inbound_id text,
    recipient text,
    bounce_type text,
    detail text,
    url text,
    domain_id text,
    key_id text,
    template_id text,
    kind text,
    provider text,
    blocked boolean DEFAULT false NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    dedupe_key text NOT NULL,
    published_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    metrics_counted_at timestamp with time zone,
    webhooks_fanned_at timestamp with time zone,
    CONSTRAINT events_bounce_type_check CHECK ((bounce_type = ANY (ARRAY['hard'::text, 'soft'::text, 'undetermined'::text]))),
    CONSTRAINT events_mode_check CHECK ((mode = ANY (ARRAY['live'::text, 'test'::text])))
);

CREATE TABLE public.file_chunks (
    owner_id text NOT NULL,
    seq integer NOT NULL,
    org_id text NOT NULL,
    data bytea NOT NULL
);
ALTER TABLE ONLY public.file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE public.inbound_attachments (
    inbound_id text NOT NULL,
    "position" integer NOT NULL,
    filename text,
    content_type text NOT NULL,
    content_id text,
    size integer NOT NULL,
    content bytea NOT NULL,
    id text NOT NULL
);

CREATE TABLE public.inbound_messages (
    id text NOT NULL,
    org_id text,
    domain_id text,
    source text NOT NULL,
    kind text,
    mail_from text,
    rcpt_to text[] DEFAULT '{}'::text[] NOT NULL,
    remote_address text,
    raw bytea NOT NULL,
    size integer NOT NULL,
    status text DEFAULT 'stored'::text NOT NULL,
    error text,
    from_address text,
    to_addresses text[] DEFAULT '{}'::text[] NOT NULL,
    cc_addresses text[] DEFAULT '{}'::text[] NOT NULL,
    subject text,
    text text,
    html text,
    headers jsonb DEFAULT '[]'::jsonb NOT NULL,
    message_id text,
    in_reply_to text,
    email_id text,
    auto_reply boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    processed_at timestamp with time zone,
    helo text,
    mailbox_hash text,
    stripped_text text,
    auth jsonb,
    route jsonb,
    forward_email_id text,
    content_purged_at timestamp with time zone,
    spam jsonb,
    CONSTRAINT inbound_messages_source_check CHECK ((source = ANY (ARRAY['mx'::text, 'http'::text]))),
    CONSTRAINT inbound_messages_status_check CHECK ((status = ANY (ARRAY['stored'::text, 'processed'::text, 'failed'::text, 'unparsed'::text])))
);

CREATE TABLE public.ip_pool_addresses (
    address text NOT NULL,
    pool_id text NOT NULL,
    warmup_started_at timestamp with time zone DEFAULT now() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    listed_at timestamp with time zone
);

CREATE TABLE public.ip_pool_assignments (
    pool_id text NOT NULL,
    org_id text,
    domain_id text,
    stream text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ip_pool_assignments_check CHECK ((num_nonnulls(org_id, domain_id, stream) = 1)),
    CONSTRAINT ip_pool_assignments_stream_check CHECK ((stream = ANY (ARRAY['transactional'::text, 'broadcast'::text])))
);

CREATE TABLE public.ip_pools (
    id text NOT NULL,
    name text NOT NULL,
    ehlo text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.metrics_daily (
    org_id text NOT NULL,
    day date NOT NULL,
    domain_id text DEFAULT ''::text NOT NULL,
    provider text DEFAULT ''::text NOT NULL,
    key_id text DEFAULT ''::text NOT NULL,
    template_id text DEFAULT ''::text NOT NULL,
    kind text DEFAULT ''::text NOT NULL,
    sent bigint DEFAULT 0 NOT NULL,
    delivered bigint DEFAULT 0 NOT NULL,
    bounced_hard bigint DEFAULT 0 NOT NULL,
    bounced_soft bigint DEFAULT 0 NOT NULL,
    complained bigint DEFAULT 0 NOT NULL,
    opened bigint DEFAULT 0 NOT NULL,
    clicked bigint DEFAULT 0 NOT NULL,
    unsubscribed bigint DEFAULT 0 NOT NULL,
    delayed bigint DEFAULT 0 NOT NULL,
    blocked bigint DEFAULT 0 NOT NULL,
    stream text DEFAULT ''::text NOT NULL,
    opened_machine bigint DEFAULT 0 NOT NULL,
    clicked_machine bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.metrics_daily_facets (
    org_id text NOT NULL,
    day date NOT NULL,
    domain_id text NOT NULL,
    facet text NOT NULL,
    facet_key text NOT NULL,
    sent bigint DEFAULT 0 NOT NULL,
    delivered bigint DEFAULT 0 NOT NULL,
    bounced_hard bigint DEFAULT 0 NOT NULL,
    bounced_soft bigint DEFAULT 0 NOT NULL,
    complained bigint DEFAULT 0 NOT NULL,
    opened bigint DEFAULT 0 NOT NULL,
    clicked bigint DEFAULT 0 NOT NULL,
    unsubscribed bigint DEFAULT 0 NOT NULL,
    delayed bigint DEFAULT 0 NOT NULL,
    blocked bigint DEFAULT 0 NOT NULL,
    opened_machine bigint DEFAULT 0 NOT NULL,
    clicked_machine bigint DEFAULT 0 NOT NULL,
    CONSTRAINT metrics_daily_facets_facet_check CHECK ((facet = ANY (ARRAY['provider'::text, 'key'::text, 'template'::text, 'kind'::text, 'stream'::text])))
);

CREATE TABLE public.metrics_daily_totals (
    org_id text NOT NULL,
    day date NOT NULL,
    domain_id text NOT NULL,
    sent bigint DEFAULT 0 NOT NULL,
    delivered bigint DEFAULT 0 NOT NULL,
    bounced_hard bigint DEFAULT 0 NOT NULL,
    bounced_soft bigint DEFAULT 0 NOT NULL,
    complained bigint DEFAULT 0 NOT NULL,
    opened bigint DEFAULT 0 NOT NULL,
    clicked bigint DEFAULT 0 NOT NULL,
    unsubscribed bigint DEFAULT 0 NOT NULL,
    delayed bigint DEFAULT 0 NOT NULL,
    blocked bigint DEFAULT 0 NOT NULL,
    opened_machine bigint DEFAULT 0 NOT NULL,
    clicked_machine bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.metrics_uniques (
    recipient_id text NOT NULL,
    type text NOT NULL
);

CREATE TABLE public.organizations (
    id text NOT NULL,
    name text NOT NULL,
    sending_paused boolean DEFAULT false NOT NULL,
    sending_paused_reason text,
    rate_limit_per_second integer DEFAULT 10 NOT NULL,
    rate_limit_burst integer DEFAULT 20 NOT NULL,
    track_opens boolean DEFAULT false NOT NULL,
    track_clicks boolean DEFAULT false NOT NULL,
    daily_cap integer,
    alert_rules jsonb DEFAULT '[]'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    retention_content_days integer DEFAULT 30 NOT NULL,
    retention_events_days integer DEFAULT 90 NOT NULL,
    retention_request_log_days integer DEFAULT 30 NOT NULL,
    require_admin_totp boolean DEFAULT false NOT NULL,
    CONSTRAINT organizations_daily_cap_check CHECK (((daily_cap IS NULL) OR (daily_cap >= 0))),
    CONSTRAINT organizations_rate_limit_burst_check CHECK (((rate_limit_burst >= 1) AND (rate_limit_burst <= 100000))),
    CONSTRAINT organizations_rate_limit_per_second_check CHECK (((rate_limit_per_second >= 1) AND (rate_limit_per_second <= 100000))),
    CONSTRAINT organizations_retention_content_days_check CHECK (((retention_content_days >= 1) AND (retention_content_days <= 3650))),
    CONSTRAINT organizations_retention_events_days_check CHECK (((retention_events_days >= 1) AND (retention_events_days <= 3650)))
);

CREATE TABLE public.rbl_checks (
    kind text NOT NULL,
    target text NOT NULL,
    zone text NOT NULL,
    status text NOT NULL,
    listed boolean DEFAULT false NOT NULL,
    answer text,
    checked_at timestamp with time zone DEFAULT now() NOT NULL,
    listed_since timestamp with time zone,
    CONSTRAINT rbl_checks_kind_check CHECK ((kind = ANY (ARRAY['ip'::text, 'domain'::text]))),
    CONSTRAINT rbl_checks_status_check CHECK ((status = ANY (ARRAY['listed'::text, 'clear'::text, 'unknown'::text])))
);

CREATE TABLE public.rbl_schedule (
    id boolean DEFAULT true NOT NULL,
    next_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT rbl_schedule_id_check CHECK (id)
);

CREATE TABLE public.request_logs (
    id text NOT NULL,
    org_id text NOT NULL,
    key_id text,
    mode text NOT NULL,
    request_id text NOT NULL,
    method text NOT NULL,
    path text NOT NULL,
    route text NOT NULL,
    query text DEFAULT ''::text NOT NULL,
    status integer NOT NULL,
    ip text,
    user_agent text,
    duration_ms integer NOT NULL,
    request_body jsonb,
    response_body jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.segment_members (
    segment_id text NOT NULL,
    contact_id text NOT NULL,
    included boolean NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.segments (
    id text NOT NULL,
    org_id text NOT NULL,
    name text NOT NULL,
    filter jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.sending_counts (
    scope text NOT NULL,
    day date NOT NULL,
    count integer DEFAULT 0 NOT NULL,
    CONSTRAINT sending_counts_count_check CHECK ((count >= 0))
);

CREATE TABLE public.suppressions (
    id text NOT NULL,
    org_id text NOT NULL,
    email text,
    domain_id text,
    reason text NOT NULL,
    source_email_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    pattern text,
    pattern_key text,
    pattern_like text,
    CONSTRAINT suppressions_email_check CHECK ((email = lower(email))),
    CONSTRAINT suppressions_email_or_pattern CHECK (((email IS NULL) <> (pattern IS NULL))),
    CONSTRAINT suppressions_pattern_keys CHECK ((((pattern IS NULL) = (pattern_key IS NULL)) AND ((pattern IS NULL) = (pattern_like IS NULL)))),
    CONSTRAINT suppressions_reason_check CHECK ((reason = ANY (ARRAY['hard_bounce'::text, 'complaint'::text, 'unsubscribe'::text, 'manual'::text])))
);

CREATE TABLE public.template_versions (
    template_id text NOT NULL,
    version integer NOT NULL,
    subject text,
    html text,
    text text,
    from_address text,
    variables jsonb DEFAULT '[]'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT template_versions_version_check CHECK ((version >= 1))
);

CREATE TABLE public.templates (
    id text NOT NULL,
    org_id text NOT NULL,
    slug text NOT NULL,
    name text NOT NULL,
    subject text,
    html text,
    text text,
    from_address text,
    variables jsonb DEFAULT '[]'::jsonb NOT NULL,
    published_version integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone
);

CREATE TABLE public.tern_migrations (
    id integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.topics (
    id text NOT NULL,
    org_id text NOT NULL,
    name text NOT NULL,
    description text,
    default_subscription text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT topics_default_subscription_check CHECK ((default_subscription = ANY (ARRAY['opt_in'::text, 'opt_out'::text])))
);

CREATE TABLE public.users (
    id text NOT NULL,
    org_id text NOT NULL,
    email text NOT NULL,
    role text NOT NULL,
    password_hash text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    totp_secret text,
    totp_pending_secret text,
    totp_enabled_at timestamp with time zone,
    totp_last_step bigint,
    totp_recovery_hashes text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT users_role_check CHECK ((role = ANY (ARRAY['member'::text, 'admin'::text])))
);

CREATE TABLE public.webhook_attempts (
    delivery_id text NOT NULL,
    attempt integer NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    status_code integer,
    latency_ms integer,
    error text,
    response_body text
);

CREATE TABLE public.webhook_deliveries (
    id text NOT NULL,
    webhook_id text NOT NULL,
    org_id text NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    body bytea NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone,
    last_status_code integer,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    CONSTRAINT webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'succeeded'::text, 'failed'::text])))
);

CREATE TABLE public.webhooks (
    id text NOT NULL,
    org_id text NOT NULL,
    url text NOT NULL,
    events text[] NOT NULL,
    description text,
    status text DEFAULT 'enabled'::text NOT NULL,
    disabled_reason text,
    signing_secret text NOT NULL,
    previous_secret text,
    previous_secret_expires_at timestamp with time zone,
    failing_since timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT webhooks_status_check CHECK ((status = ANY (ARRAY['enabled'::text, 'disabled'::text])))
);

ALTER TABLE ONLY public.api_key_tokens
    ADD CONSTRAINT api_key_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.audit_log
    ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.automation_run_steps
    ADD CONSTRAINT automation_run_steps_pkey PRIMARY KEY (run_id, seq);

ALTER TABLE ONLY public.automation_runs
    ADD CONSTRAINT automation_runs_automation_id_contact_id_occurrence_key UNIQUE (automation_id, contact_id, occurrence);

ALTER TABLE ONLY public.automation_runs
    ADD CONSTRAINT automation_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.automations
    ADD CONSTRAINT automations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.broadcast_recipients
    ADD CONSTRAINT broadcast_recipients_pkey PRIMARY KEY (broadcast_id, contact_id);

ALTER TABLE ONLY public.broadcasts
    ADD CONSTRAINT broadcasts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.console_sessions
    ADD CONSTRAINT console_sessions_pkey PRIMARY KEY (id_hash);

ALTER TABLE ONLY public.contact_events
    ADD CONSTRAINT contact_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.contact_exports
    ADD CONSTRAINT contact_exports_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.contact_import_errors
    ADD CONSTRAINT contact_import_errors_pkey PRIMARY KEY (import_id, line);

ALTER TABLE ONLY public.contact_imports
    ADD CONSTRAINT contact_imports_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.contact_topics
    ADD CONSTRAINT contact_topics_pkey PRIMARY KEY (contact_id, topic_id);

ALTER TABLE ONLY public.contacts
    ADD CONSTRAINT contacts_org_id_email_key UNIQUE (org_id, email);

ALTER TABLE ONLY public.contacts
    ADD CONSTRAINT contacts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.dmarc_records
    ADD CONSTRAINT dmarc_records_pkey PRIMARY KEY (report_id, "position");

ALTER TABLE ONLY public.dmarc_reports
    ADD CONSTRAINT dmarc_reports_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.domains
    ADD CONSTRAINT domains_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.email_attachments
    ADD CONSTRAINT email_attachments_pkey PRIMARY KEY (email_id, "position");

ALTER TABLE ONLY public.email_recipients
    ADD CONSTRAINT email_recipients_email_id_email_key UNIQUE (email_id, email);

ALTER TABLE ONLY public.email_recipients
    ADD CONSTRAINT email_recipients_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.emails
    ADD CONSTRAINT emails_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.file_chunks
    ADD CONSTRAINT file_chunks_pkey PRIMARY KEY (owner_id, seq);

ALTER TABLE ONLY public.inbound_attachments
    ADD CONSTRAINT inbound_attachments_pkey PRIMARY KEY (inbound_id, "position");

ALTER TABLE ONLY public.inbound_messages
    ADD CONSTRAINT inbound_messages_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.ip_pool_addresses
    ADD CONSTRAINT ip_pool_addresses_pkey PRIMARY KEY (address);

ALTER TABLE ONLY public.ip_pools
    ADD CONSTRAINT ip_pools_name_key UNIQUE (name);

ALTER TABLE ONLY public.ip_pools
    ADD CONSTRAINT ip_pools_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.metrics_daily_facets
    ADD CONSTRAINT metrics_daily_facets_pkey PRIMARY KEY (org_id, domain_id, facet, day, facet_key);

ALTER TABLE ONLY public.metrics_daily
    ADD CONSTRAINT metrics_daily_pkey PRIMARY KEY (org_id, day, domain_id, provider, key_id, template_id, kind, stream);

ALTER TABLE ONLY public.metrics_daily_totals
    ADD CONSTRAINT metrics_daily_totals_pkey PRIMARY KEY (org_id, domain_id, day);

ALTER TABLE ONLY public.metrics_uniques
    ADD CONSTRAINT metrics_uniques_pkey PRIMARY KEY (recipient_id, type);

ALTER TABLE ONLY public.organizations
    ADD CONSTRAINT organizations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.rbl_checks
    ADD CONSTRAINT rbl_checks_pkey PRIMARY KEY (kind, target, zone);

ALTER TABLE ONLY public.rbl_schedule
    ADD CONSTRAINT rbl_schedule_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.request_logs
    ADD CONSTRAINT request_logs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.segment_members
    ADD CONSTRAINT segment_members_pkey PRIMARY KEY (segment_id, contact_id);

ALTER TABLE ONLY public.segments
    ADD CONSTRAINT segments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.sending_counts
    ADD CONSTRAINT sending_counts_pkey PRIMARY KEY (scope, day);

ALTER TABLE ONLY public.suppressions
    ADD CONSTRAINT suppressions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.template_versions
    ADD CONSTRAINT template_versions_pkey PRIMARY KEY (template_id, version);

ALTER TABLE ONLY public.templates
    ADD CONSTRAINT templates_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.tern_migrations
    ADD CONSTRAINT tern_migrations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.topics
    ADD CONSTRAINT topics_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.webhook_attempts
    ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY (delivery_id, attempt);

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_event_id_webhook_id_key UNIQUE (event_id, webhook_id);

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.webhooks
    ADD CONSTRAINT webhooks_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX api_key_tokens_hash_key ON public.api_key_tokens USING btree (token_hash);

CREATE INDEX api_key_tokens_key_idx ON public.api_key_tokens USING btree (key_id);

CREATE INDEX api_keys_org_idx ON public.api_keys USING btree (org_id, id);

CREATE INDEX audit_log_org_action_idx ON public.audit_log USING btree (org_id, action, id DESC);

CREATE INDEX audit_log_org_actor_idx ON public.audit_log USING btree (org_id, actor_id, id DESC);

CREATE INDEX audit_log_org_idx ON public.audit_log USING btree (org_id, id DESC);

CREATE INDEX automation_runs_automation_idx ON public.automation_runs USING btree (automation_id, id DESC);

CREATE INDEX automation_runs_contact_idx ON public.automation_runs USING btree (contact_id);

CREATE INDEX automation_runs_due_idx ON public.automation_runs USING btree (next_at) WHERE (status = 'active'::text);

CREATE INDEX automation_runs_status_idx ON public.automation_runs USING btree (automation_id, status, id DESC);

CREATE INDEX automation_runs_waiting_idx ON public.automation_runs USING btree (contact_id, waiting_for) WHERE ((status = 'active'::text) AND (waiting_for IS NOT NULL));

CREATE INDEX automations_org_idx ON public.automations USING btree (org_id, id DESC);

CREATE INDEX automations_trigger_idx ON public.automations USING btree (org_id, trigger_type, trigger_event) WHERE (status = 'enabled'::text);

CREATE INDEX broadcast_recipients_email_idx ON public.broadcast_recipients USING btree (email_id) WHERE (email_id IS NOT NULL);

CREATE INDEX broadcasts_active_idx ON public.broadcasts USING btree (updated_at) WHERE (status = ANY (ARRAY['scheduled'::text, 'sending'::text]));

CREATE INDEX broadcasts_domain_idx ON public.broadcasts USING btree (domain_id);

CREATE INDEX broadcasts_org_list_idx ON public.broadcasts USING btree (org_id, mode, id DESC);

CREATE INDEX broadcasts_segment_idx ON public.broadcasts USING btree (segment_id) WHERE (segment_id IS NOT NULL);

CREATE INDEX broadcasts_topic_idx ON public.broadcasts USING btree (topic_id) WHERE (topic_id IS NOT NULL);

CREATE INDEX console_sessions_expires_idx ON public.console_sessions USING btree (expires_at);

CREATE INDEX console_sessions_user_idx ON public.console_sessions USING btree (user_id);

CREATE INDEX contact_events_contact_idx ON public.contact_events USING btree (contact_id, id DESC);

CREATE INDEX contact_events_org_idx ON public.contact_events USING btree (org_id, id DESC);

CREATE INDEX contact_events_pending_idx ON public.contact_events USING btree (id) WHERE (consumed_at IS NULL);

CREATE INDEX contact_exports_open_idx ON public.contact_exports USING btree (updated_at) WHERE (status = ANY (ARRAY['queued'::text, 'running'::text]));

CREATE INDEX contact_exports_org_idx ON public.contact_exports USING btree (org_id, id DESC);

CREATE UNIQUE INDEX contact_imports_dedupe_key ON public.contact_imports USING btree (org_id, dedupe_key) WHERE (dedupe_key IS NOT NULL);

CREATE INDEX contact_imports_open_idx ON public.contact_imports USING btree (updated_at) WHERE (status = ANY (ARRAY['receiving'::text, 'queued'::text, 'running'::text]));

CREATE INDEX contact_imports_org_idx ON public.contact_imports USING btree (org_id, id DESC) WHERE (status <> 'receiving'::text);

CREATE INDEX contact_topics_topic_idx ON public.contact_topics USING btree (topic_id, subscription);

CREATE INDEX contacts_automations_pending_idx ON public.contacts USING btree (id) WHERE ((automations_seen_at IS NULL) AND automations_on_create);

CREATE INDEX contacts_org_idx ON public.contacts USING btree (org_id, id DESC);

CREATE INDEX contacts_properties_idx ON public.contacts USING gin (properties jsonb_path_ops);

CREATE INDEX dmarc_reports_domain_end_idx ON public.dmarc_reports USING btree (domain_id, end_at);

CREATE UNIQUE INDEX dmarc_reports_key ON public.dmarc_reports USING btree (domain_id, reporter_name, report_id);

CREATE INDEX domains_next_check_idx ON public.domains USING btree (next_check_at) WHERE (next_check_at IS NOT NULL);

CREATE UNIQUE INDEX domains_org_name_key ON public.domains USING btree (org_id, name);

CREATE UNIQUE INDEX domains_verified_name_key ON public.domains USING btree (name) WHERE (status = 'verified'::text);

CREATE UNIQUE INDEX email_raw_messages_key ON public.email_raw_messages USING btree (email_id, COALESCE(recipient_id, ''::text));

CREATE INDEX email_raw_messages_recipient_idx ON public.email_raw_messages USING btree (recipient_id);

CREATE INDEX email_recipients_inflight_idx ON public.email_recipients USING btree (attempt_started_at) WHERE (attempt_started_at IS NOT NULL);

CREATE INDEX email_recipients_org_domain_idx ON public.email_recipients USING btree (org_id, split_part(email, '@'::text, 2), email_id DESC);

CREATE INDEX email_recipients_org_email_idx ON public.email_recipients USING btree (org_id, email text_pattern_ops, email_id DESC);

CREATE INDEX email_recipients_pending_idx ON public.email_recipients USING btree (status, next_attempt_at) WHERE (status = ANY (ARRAY['queued'::text, 'sent'::text, 'delivery_delayed'::text]));

CREATE INDEX emails_domain_idx ON public.emails USING btree (domain_id);

CREATE INDEX emails_envelope_from_idx ON public.emails USING btree (org_id, lower(envelope_from)) WHERE (envelope_from IS NOT NULL);

CREATE INDEX emails_message_id_idx ON public.emails USING btree (message_id);

CREATE INDEX emails_org_domain_idx ON public.emails USING btree (org_id, domain_id, id DESC);

CREATE INDEX emails_org_from_idx ON public.emails USING btree (org_id, mode, from_email, id DESC);

CREATE INDEX emails_org_list_idx ON public.emails USING btree (org_id, mode, id DESC);

CREATE INDEX emails_org_state_idx ON public.emails USING btree (org_id, mode, (
CASE
    WHEN (status = 'sent'::text) THEN COALESCE(substr(last_event, 7), 'sent'::text)
    ELSE status
END), id DESC);

CREATE INDEX emails_org_stream_idx ON public.emails USING btree (org_id, mode, stream, id DESC);

CREATE INDEX emails_retention_idx ON public.emails USING btree (org_id, created_at) WHERE (content_purged_at IS NULL);

CREATE INDEX emails_scheduled_idx ON public.emails USING btree (scheduled_at) WHERE (status = 'scheduled'::text);

CREATE INDEX emails_subject_words_idx ON public.emails USING gin (to_tsvector('simple'::regconfig, subject));

CREATE INDEX emails_tags_idx ON public.emails USING gin (tags jsonb_path_ops);

CREATE INDEX emails_unsettled_idx ON public.emails USING btree (updated_at) WHERE (status = ANY (ARRAY['queued'::text, 'processing'::text]));

CREATE INDEX events_blocked_idx ON public.events USING btree (org_id, provider, id DESC) WHERE blocked;

CREATE UNIQUE INDEX events_dedupe_key ON public.events USING btree (dedupe_key);

CREATE INDEX events_email_idx ON public.events USING btree (email_id, id);

CREATE INDEX events_metrics_pending_idx ON public.events USING btree (id) WHERE (metrics_counted_at IS NULL);

CREATE INDEX events_recipient_idx ON public.events USING btree (recipient_id) WHERE (recipient_id IS NOT NULL);

CREATE INDEX events_retention_idx ON public.events USING btree (org_id, created_at);

CREATE INDEX events_unpublished_idx ON public.events USING btree (id) WHERE (published_at IS NULL);

CREATE INDEX events_webhooks_pending_idx ON public.events USING btree (id) WHERE (webhooks_fanned_at IS NULL);

CREATE INDEX file_chunks_org_idx ON public.file_chunks USING btree (org_id);

CREATE UNIQUE INDEX inbound_attachments_id_key ON public.inbound_attachments USING btree (id);

CREATE INDEX inbound_messages_domain_idx ON public.inbound_messages USING btree (domain_id) WHERE (domain_id IS NOT NULL);

CREATE INDEX inbound_messages_email_idx ON public.inbound_messages USING btree (email_id) WHERE (email_id IS NOT NULL);

CREATE INDEX inbound_messages_forward_email_idx ON public.inbound_messages USING btree (forward_email_id) WHERE (forward_email_id IS NOT NULL);

CREATE INDEX inbound_messages_org_idx ON public.inbound_messages USING btree (org_id, id DESC);

CREATE INDEX inbound_messages_pending_idx ON public.inbound_messages USING btree (id) WHERE (status = 'stored'::text);

CREATE INDEX inbound_messages_retention_idx ON public.inbound_messages USING btree (org_id, created_at) WHERE (content_purged_at IS NULL);

CREATE INDEX ip_pool_addresses_pool_idx ON public.ip_pool_addresses USING btree (pool_id);

CREATE UNIQUE INDEX ip_pool_assignments_domain_key ON public.ip_pool_assignments USING btree (domain_id) WHERE (domain_id IS NOT NULL);

CREATE UNIQUE INDEX ip_pool_assignments_org_key ON public.ip_pool_assignments USING btree (org_id) WHERE (org_id IS NOT NULL);

CREATE INDEX ip_pool_assignments_pool_idx ON public.ip_pool_assignments USING btree (pool_id);

CREATE UNIQUE INDEX ip_pool_assignments_stream_key ON public.ip_pool_assignments USING btree (stream) WHERE (stream IS NOT NULL);

CREATE INDEX request_logs_org_created_idx ON public.request_logs USING btree (org_id, created_at);

CREATE INDEX request_logs_org_id_idx ON public.request_logs USING btree (org_id, mode, id DESC);

CREATE INDEX segment_members_contact_idx ON public.segment_members USING btree (contact_id);

CREATE INDEX segments_org_idx ON public.segments USING btree (org_id, id DESC);

CREATE INDEX suppressions_domain_idx ON public.suppressions USING btree (domain_id) WHERE (domain_id IS NOT NULL);

CREATE UNIQUE INDEX suppressions_org_email_domain_key ON public.suppressions USING btree (org_id, email, COALESCE(domain_id, ''::text));

CREATE INDEX suppressions_org_list_idx ON public.suppressions USING btree (org_id, id DESC);

CREATE UNIQUE INDEX suppressions_org_pattern_domain_key ON public.suppressions USING btree (org_id, pattern, COALESCE(domain_id, ''::text)) WHERE (pattern IS NOT NULL);

CREATE INDEX suppressions_pattern_key_idx ON public.suppressions USING btree (org_id, pattern_key) WHERE (pattern IS NOT NULL);

CREATE INDEX templates_org_list_idx ON public.templates USING btree (org_id, id DESC) WHERE (deleted_at IS NULL);

CREATE UNIQUE INDEX templates_org_slug_key ON public.templates USING btree (org_id, slug) WHERE (deleted_at IS NULL);

CREATE INDEX topics_org_idx ON public.topics USING btree (org_id, id DESC);

CREATE UNIQUE INDEX users_email_key ON public.users USING btree (lower(email));

CREATE INDEX users_org_idx ON public.users USING btree (org_id);

CREATE INDEX webhook_deliveries_due_idx ON public.webhook_deliveries USING btree (next_attempt_at) WHERE (status = 'pending'::text);

CREATE INDEX webhook_deliveries_list_idx ON public.webhook_deliveries USING btree (webhook_id, id DESC);

CREATE INDEX webhook_deliveries_pending_age_idx ON public.webhook_deliveries USING btree (created_at) WHERE (status = 'pending'::text);

CREATE INDEX webhook_deliveries_retention_idx ON public.webhook_deliveries USING btree (org_id, created_at);

CREATE INDEX webhooks_org_idx ON public.webhooks USING btree (org_id, id DESC);

ALTER TABLE ONLY public.api_key_tokens
    ADD CONSTRAINT api_key_tokens_key_id_fkey FOREIGN KEY (key_id) REFERENCES public.api_keys(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.audit_log
    ADD CONSTRAINT audit_log_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.automation_run_steps
    ADD CONSTRAINT automation_run_steps_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.automation_runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.automation_runs
    ADD CONSTRAINT automation_runs_automation_id_fkey FOREIGN KEY (automation_id) REFERENCES public.automations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.automation_runs
    ADD CONSTRAINT automation_runs_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES public.contacts(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.automation_runs
    ADD CONSTRAINT automation_runs_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.automations
    ADD CONSTRAINT automations_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.broadcast_recipients
    ADD CONSTRAINT broadcast_recipients_broadcast_id_fkey FOREIGN KEY (broadcast_id) REFERENCES public.broadcasts(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.broadcast_recipients
    ADD CONSTRAINT broadcast_recipients_email_id_fkey FOREIGN KEY (email_id) REFERENCES public.emails(id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.broadcasts
    ADD CONSTRAINT broadcasts_domain_id_fkey FOREIGN KEY (domain_id) REFERENCES public.domains(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.broadcasts
    ADD CONSTRAINT broadcasts_key_id_fkey FOREIGN KEY (key_id) REFERENCES public.api_keys(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.broadcasts
    ADD CONSTRAINT broadcasts_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.broadcasts
    ADD CONSTRAINT broadcasts_segment_id_fkey FOREIGN KEY (segment_id) REFERENCES public.segments(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.broadcasts
    ADD CONSTRAINT broadcasts_template_id_fkey FOREIGN KEY (template_id) REFERENCES public.templates(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.broadcasts
    ADD CONSTRAINT broadcasts_topic_id_fkey FOREIGN KEY (topic_id) REFERENCES public.topics(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.console_sessions
    ADD CONSTRAINT console_sessions_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.contact_events
    ADD CONSTRAINT contact_events_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES public.contacts(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.contact_events
    ADD CONSTRAINT contact_events_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.contact_exports
    ADD CONSTRAINT contact_exports_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.contact_import_errors
    ADD CONSTRAINT contact_import_errors_import_id_fkey FOREIGN KEY (import_id) REFERENCES public.contact_imports(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.contact_imports
    ADD CONSTRAINT contact_imports_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.contact_topics
    ADD CONSTRAINT contact_topics_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES public.contacts(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.contact_topics
    ADD CONSTRAINT contact_topics_topic_id_fkey FOREIGN KEY (topic_id) REFERENCES public.topics(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.contacts
    ADD CONSTRAINT contacts_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.dmarc_records
    ADD CONSTRAINT dmarc_records_report_id_fkey FOREIGN KEY (report_id) REFERENCES public.dmarc_reports(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.dmarc_reports
    ADD CONSTRAINT dmarc_reports_domain_id_fkey FOREIGN KEY (domain_id) REFERENCES public.domains(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.dmarc_reports
    ADD CONSTRAINT dmarc_reports_inbound_id_fkey FOREIGN KEY (inbound_id) REFERENCES public.inbound_messages(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.dmarc_reports
    ADD CONSTRAINT dmarc_reports_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.domains
    ADD CONSTRAINT domains_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.email_attachments
    ADD CONSTRAINT email_attachments_email_id_fkey FOREIGN KEY (email_id) REFERENCES public.emails(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.email_raw_messages
    ADD CONSTRAINT email_raw_messages_email_id_fkey FOREIGN KEY (email_id) REFERENCES public.emails(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.email_raw_messages
    ADD CONSTRAINT email_raw_messages_recipient_id_fkey FOREIGN KEY (recipient_id) REFERENCES public.email_recipients(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.email_recipients
    ADD CONSTRAINT email_recipients_email_id_fkey FOREIGN KEY (email_id) REFERENCES public.emails(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.emails
    ADD CONSTRAINT emails_domain_id_fkey FOREIGN KEY (domain_id) REFERENCES public.domains(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.emails
    ADD CONSTRAINT emails_key_id_fkey FOREIGN KEY (key_id) REFERENCES public.api_keys(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.emails
    ADD CONSTRAINT emails_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.emails
    ADD CONSTRAINT emails_template_id_fkey FOREIGN KEY (template_id) REFERENCES public.templates(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_email_id_fkey FOREIGN KEY (email_id) REFERENCES public.emails(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_recipient_id_fkey FOREIGN KEY (recipient_id) REFERENCES public.email_recipients(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.file_chunks
    ADD CONSTRAINT file_chunks_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.inbound_attachments
    ADD CONSTRAINT inbound_attachments_inbound_id_fkey FOREIGN KEY (inbound_id) REFERENCES public.inbound_messages(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.inbound_messages
    ADD CONSTRAINT inbound_messages_domain_id_fkey FOREIGN KEY (domain_id) REFERENCES public.domains(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.inbound_messages
    ADD CONSTRAINT inbound_messages_email_id_fkey FOREIGN KEY (email_id) REFERENCES public.emails(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.inbound_messages
    ADD CONSTRAINT inbound_messages_forward_email_id_fkey FOREIGN KEY (forward_email_id) REFERENCES public.emails(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.inbound_messages
    ADD CONSTRAINT inbound_messages_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.ip_pool_addresses
    ADD CONSTRAINT ip_pool_addresses_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES public.ip_pools(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.ip_pool_assignments
    ADD CONSTRAINT ip_pool_assignments_domain_id_fkey FOREIGN KEY (domain_id) REFERENCES public.domains(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.ip_pool_assignments
    ADD CONSTRAINT ip_pool_assignments_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.ip_pool_assignments
    ADD CONSTRAINT ip_pool_assignments_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES public.ip_pools(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.request_logs
    ADD CONSTRAINT request_logs_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.segment_members
    ADD CONSTRAINT segment_members_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES public.contacts(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.segment_members
    ADD CONSTRAINT segment_members_segment_id_fkey FOREIGN KEY (segment_id) REFERENCES public.segments(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.segments
    ADD CONSTRAINT segments_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.suppressions
    ADD CONSTRAINT suppressions_domain_id_fkey FOREIGN KEY (domain_id) REFERENCES public.domains(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.suppressions
    ADD CONSTRAINT suppressions_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.template_versions
    ADD CONSTRAINT template_versions_template_id_fkey FOREIGN KEY (template_id) REFERENCES public.templates(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.templates
    ADD CONSTRAINT templates_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.topics
    ADD CONSTRAINT topics_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.webhook_attempts
    ADD CONSTRAINT webhook_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES public.webhook_deliveries(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_webhook_id_fkey FOREIGN KEY (webhook_id) REFERENCES public.webhooks(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.webhooks
    ADD CONSTRAINT webhooks_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id) ON DELETE CASCADE;
