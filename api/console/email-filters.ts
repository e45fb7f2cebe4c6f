// The Emails page's filters: read from the query string (every filter is a GET parameter, so a
// filtered list is a link that can be shared), turned into a search (shared/db/email-search.ts),
// and shown as a form. A value that cannot be used is reported and left out, never a failure.
import type { DomainRow } from '../../shared/db/domains.js';
import { EMAIL_STATES, type EmailSearch, type EmailState } from '../../shared/db/email-search.js';
import type { KeyRow } from '../../shared/db/keys.js';
import type { TemplateRow } from '../../shared/db/templates.js';
import { isId } from '../../shared/ids.js';
import type { Mode } from '../../shared/keys.js';
import { isStream, STREAMS, type Stream } from '../../shared/streams.js';
import { html, type Safe } from './html.js';
import { hrefWith, selectField, textField } from './ui.js';

/** The query parameters of the page, as given (trimmed), for links and the form. */
export const FILTER_PARAMS = [
  'mode',
  'state',
  'to',
  'from',
  'subject',
  'domain',
  'tag',
  'key',
  'template',
  'stream',
  'since',
  'until',
] as const;
export type FilterParams = Partial<Record<(typeof FILTER_PARAMS)[number], string>>;

export interface ParsedFilters {
  params: FilterParams;
  search: Omit<EmailSearch, 'orgId'>;
  problems: string[];
  /** Any filter besides the mode. */
  filtered: boolean;
}

const STATE_LABELS: Record<EmailState, string> = {
  scheduled: 'Scheduled',
  queued: 'Queued',
  processing: 'Sending',
  sent: 'Sent (no answer yet)',
  delivered: 'Delivered',
  delivery_delayed: 'Delayed',
  bounced: 'Bounced',
  complained: 'Complained',
  rejected: 'Rejected',
  failed: 'Failed',
  canceled: 'Canceled',
  opened: 'Opened',
  clicked: 'Clicked',
  unsubscribed: 'Unsubscribed',
};

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function day(value: string, label: string, problems: string[]): Date | undefined {
  const d = DAY.test(value) ? new Date(`${value}T00:00:00.000Z`) : null;
  if (!d || Number.isNaN(d.getTime())) {
    problems.push(`${label} "${value}" is not a date (YYYY-MM-DD); left out`);
    return undefined;
  }
  return d;
}

/** Subject words: letters and digits only (they become a prefix text query), at most 8. */
export function subjectWords(value: string): string[] {
  return value
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0)
    .slice(0, 8)
    .map((w) => w.slice(0, 60));
}

function bareAddress(value: string): string {
  const m = /<([^<>]+)>\s*$/.exec(value);
  return (m ? m[1]! : value).trim().toLowerCase();
}

export function parseFilters(query: Record<string, unknown>): ParsedFilters {
  const params: FilterParams = {};
  for (const k of FILTER_PARAMS) {
    const v = query[k];
    if (typeof v === 'string' && v.trim() !== '') params[k] = v.trim().slice(0, 320);
  }
  const problems: string[] = [];
  const mode: Mode = params.mode === 'test' ? 'test' : 'live';
  const search: ParsedFilters['search'] = { mode };
  if (params.state) {
    if ((EMAIL_STATES as readonly string[]).includes(params.state)) search.state = params.state as EmailState;
    else problems.push(`Status "${params.state}" is unknown; left out`);
  }
  if (params.to) {
    const domain = /^\*?@([^@\s*]+)$/.exec(params.to);
    if (domain) {
      search.recipientDomain = domain[1]!.toLowerCase();
    } else {
      const prefix = params.to.endsWith('*');
      const value = params.to.replace(/\*+$/, '').toLowerCase();
      if (value) search.recipient = { value, prefix };
    }
  }
  if (params.from) search.from = bareAddress(params.from);
  if (params.subject) {
    const words = subjectWords(params.subject);
    if (words.length) search.subjectWords = words;
  }
  if (params.domain) {
    if (isId(params.domain, 'dom')) search.domainId = params.domain;
    else problems.push('Domain is not a domain id; left out');
  }
  if (params.tag) {
    const eq = params.tag.indexOf('=');
    if (eq > 0) search.tag = { name: params.tag.slice(0, eq).trim(), value: params.tag.slice(eq + 1).trim() };
    else problems.push(`Tag "${params.tag}" is not name=value; left out`);
  }
  if (params.key) {
    if (isId(params.key, 'key')) search.keyId = params.key;
    else problems.push('API key is not a key id; left out');
  }
  if (params.template) {
    if (isId(params.template, 'tpl')) search.templateId = params.template;
    else problems.push('Template is not a template id; left out');
  }
  if (params.stream) {
    if (isStream(params.stream)) search.stream = params.stream;
    else problems.push(`Stream "${params.stream}" is unknown; left out`);
  }
  if (params.since) search.since = day(params.since, 'From date', problems);
  if (params.until) {
    const d = day(params.until, 'To date', problems);
    // The "to" day is included: the range ends at the next midnight.
    if (d) search.until = new Date(d.getTime() + 86_400_000);
  }
  const filtered = Object.keys(params).some((k) => k !== 'mode');
  return { params, search, problems, filtered };
}

/** The page's link with these filters (and a cursor, if any). */
export function listHref(params: FilterParams, cursor: { after?: string; before?: string } = {}): string {
  return hrefWith('/console/emails', { ...params, ...cursor });
}

export interface FilterChoices {
  domains: DomainRow[];
  keys: KeyRow[];
  templates: TemplateRow[];
}

/** The filters behind "More filters": open when one of them is in use. */
const MORE: (keyof FilterParams)[] = ['from', 'domain', 'tag', 'key', 'template', 'since', 'until'];

const STREAM_LABELS: Record<Stream, string> = { transactional: 'Transactional', broadcast: 'Broadcast' };

export function filterForm(p: FilterParams, c: FilterChoices): Safe {
  const any: [string, string] = ['', 'Any'];
  const more = MORE.some((k) => p[k]);
  return html`<form method="get" action="/console/emails" role="search" aria-label="Filter emails">
    <input type="hidden" name="mode" value="${p.mode === 'test' ? 'test' : 'live'}" />
    <div class="filters">
      ${textField({
        name: 'to',
        label: 'Recipient',
        value: p.to,
        type: 'search',
        placeholder: 'bob@example.com',
        hint: 'Exact address; end with * for a prefix; @example.com for a whole domain',
      })}
      ${selectField({
        name: 'state',
        label: 'Status',
        value: p.state,
        options: [any, ...EMAIL_STATES.map((s): [string, string] => [s, STATE_LABELS[s]])],
      })}
      ${selectField({
        name: 'stream',
        label: 'Stream',
        value: p.stream,
        options: [any, ...STREAMS.map((s): [string, string] => [s, STREAM_LABELS[s]])],
      })}
      ${textField({ name: 'subject', label: 'Subject words', value: p.subject, type: 'search', hint: 'Whole words, all of them' })}
      <div class="buttons">
        <button type="submit" class="primary">Filter</button>
        <a class="btn" href="${listHref({ mode: p.mode })}">Clear</a>
      </div>
    </div>
    <details class="more" ${more ? html`open` : ''}>
      <summary>More filters</summary>
      <div class="filters">
        ${textField({ name: 'from', label: 'From', value: p.from, type: 'search', placeholder: 'hello@acme.com' })}
        ${selectField({
          name: 'domain',
          label: 'Domain',
          value: p.domain,
          options: [any, ...c.domains.map((d): [string, string] => [d.id, d.name])],
        })}
        ${textField({ name: 'tag', label: 'Tag', value: p.tag, type: 'search', placeholder: 'name=value' })}
        ${selectField({
          name: 'key',
          label: 'API key',
          value: p.key,
          options: [any, ...c.keys.map((k): [string, string] => [k.id, `${k.name} (${k.token_prefix}…)`])],
        })}
        ${selectField({
          name: 'template',
          label: 'Template',
          value: p.template,
          options: [any, ...c.templates.map((t): [string, string] => [t.id, t.name || t.slug])],
        })}
        ${textField({ name: 'since', label: 'From date (UTC)', value: p.since, type: 'date' })}
        ${textField({ name: 'until', label: 'To date (UTC)', value: p.until, type: 'date' })}
      </div>
    </details>
  </form>`;
}
