// Segments made in the console (admins, as ADMIN keys on the API): a filter builder of up to
// BUILDER_ROWS conditions (a contact field or a property, an operator, a value), all or any of
// which must hold, checked by the API's own rules (shared/segment-filter.ts checkFilter) and
// saved by its function (shared/db/segments.ts insertSegment); deleting one after a confirmation.
// Any filter, the API's deeper ones included, is shown in words (describeFilter).
import { deleteSegment, findSegment, insertSegment } from '../../shared/db/segments.js';
import type { SessionRow } from '../../shared/db/users.js';
import { notFound, validationError } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import {
  checkFilter,
  CONTACT_FIELDS,
  OPS,
  PROPERTY_NAME,
  type FieldCondition,
  type Op,
  type Scalar,
  type SegmentFilter,
} from '../../shared/segment-filter.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { csrfField, html, type Safe } from './html.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import { card, hrefWith, selectField, textField } from './ui.js';

const ACTIVE = '/console/segments';
const BUILDER_ROWS = 5;

const OP_WORDS: Record<Op, string> = {
  eq: 'is',
  neq: 'is not',
  in: 'is one of',
  not_in: 'is none of',
  contains: 'contains',
  starts_with: 'starts with',
  ends_with: 'ends with',
  gt: 'is after / more than',
  gte: 'is at least',
  lt: 'is before / less than',
  lte: 'is at most',
  exists: 'is set (true or false)',
};

const FIELD_WORDS: Record<string, string> = {
  email: 'email',
  first_name: 'first name',
  last_name: 'last name',
  unsubscribed: 'unsubscribed',
  created_at: 'added',
};

function scalarText(v: unknown): string {
  return Array.isArray(v) ? v.map(scalarText).join(', ') : typeof v === 'string' ? `"${v}"` : String(v);
}

/** A filter in words: `email ends with "@acme.test" and (plan is "pro" or not subscribed to topic_…)`. */
export function describeFilter(f: SegmentFilter, top = true): string {
  const group = (list: SegmentFilter[], word: string) => {
    if (list.length === 0) return word === 'and' ? 'every contact' : 'no contact';
    const text = list.map((x) => describeFilter(x, false)).join(` ${word} `);
    return top || list.length === 1 ? text : `(${text})`;
  };
  if ('all' in f) return group(f.all, 'and');
  if ('any' in f) return group(f.any, 'or');
  if ('not' in f) return `not ${describeFilter(f.not, false)}`;
  if ('topic' in f) return `${f.subscribed ? 'subscribed' : 'not subscribed'} to topic ${f.topic}`;
  const field = f.field.startsWith('properties.') ? f.field.slice(11) : (FIELD_WORDS[f.field] ?? f.field);
  return `${field} ${OP_WORDS[f.op]}${f.value === undefined ? '' : ` ${scalarText(f.value)}`}`;
}

/** A typed value from the builder's text: true/false/null, numbers for a property's comparison, lists split at commas. */
function valueOf(field: string, op: Op, text: string): Scalar | Scalar[] {
  const one = (t: string): Scalar => {
    if (field === 'unsubscribed' || op === 'exists') return t === 'true' ? true : t === 'false' ? false : t;
    if (field.startsWith('properties.') && /^-?\d+(\.\d+)?$/.test(t)) return Number(t);
    return t;
  };
  if (op === 'in' || op === 'not_in')
    return text
      .split(',')
      .map((t) => one(t.trim()))
      .filter((v) => v !== '');
  return one(text);
}

/** The builder's rows as conditions (empty rows left out), each checked as the API checks it. */
function builtFilter(form: URLSearchParams): SegmentFilter {
  const conditions: FieldCondition[] = [];
  for (let i = 0; i < BUILDER_ROWS; i++) {
    const kind = form.get(`field_${i}`) ?? '';
    const text = (form.get(`value_${i}`) ?? '').trim();
    if (!kind) continue;
    const prop = (form.get(`property_${i}`) ?? '').trim();
    if (kind === 'property' && !new RegExp(PROPERTY_NAME).test(prop)) {
      throw validationError(`Condition ${i + 1}: a property name is letters, digits, _ . - (at most 64)`);
    }
    if (kind !== 'property' && !(CONTACT_FIELDS as readonly string[]).includes(kind)) {
      throw validationError(`Condition ${i + 1}: unknown field`);
    }
    const op = form.get(`op_${i}`) as Op;
    if (!OPS.includes(op)) throw validationError(`Condition ${i + 1}: unknown operator`);
    const field = kind === 'property' ? `properties.${prop}` : kind;
    const c: FieldCondition = { field, op, value: valueOf(field, op, text) };
    checkFilter(c, `Condition ${i + 1}`);
    conditions.push(c);
  }
  return form.get('match') === 'any' ? { any: conditions } : { all: conditions };
}

function builder(session: SessionRow): Safe {
  const fields: [string, string][] = [
    ['', '(none)'],
    ...CONTACT_FIELDS.map((f): [string, string] => [f, FIELD_WORDS[f] ?? f]),
    ['property', 'a property…'],
  ];
  const ops = OPS.map((o): [string, string] => [o, OP_WORDS[o]]);
  const rows = Array.from(
    { length: BUILDER_ROWS },
    (_, i) =>
      html`<fieldset class="condition">
        <legend>Condition ${i + 1}</legend>
        ${selectField({ name: `field_${i}`, label: 'Field', options: fields, value: i === 0 ? 'email' : '' })}
        ${textField({ name: `property_${i}`, label: 'Property name (for a property)', maxlength: 64 })}
        ${selectField({ name: `op_${i}`, label: 'Operator', options: ops, value: i === 0 ? 'ends_with' : 'eq' })}
        ${textField({
          name: `value_${i}`,
          label: 'Value',
          maxlength: 500,
          ...(i === 0 ? { hint: 'Lists: commas between; true or false for yes-no fields; dates as 2026-11-01' } : {}),
        })}
      </fieldset>`,
  );
  return html`<form method="post" action="/console/segments" class="stack segment-builder">
    ${csrfField(session)} ${textField({ name: 'name', label: 'Segment name', required: true, maxlength: 200 })}
    ${selectField({
      name: 'match',
      label: 'Contacts that match',
      options: [
        ['all', 'all of the conditions'],
        ['any', 'any of the conditions'],
      ],
    })}
    <div class="conditions">${rows}</div>
    <p><button type="submit" class="primary">Create segment</button></p>
  </form>`;
}

async function newPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  show(ctx, session, {
    title: 'New segment',
    active: ACTIVE,
    lead: html`Choose conditions on contact fields or properties; rows left at (none) are ignored. The segment's
    contacts are worked out whenever it is read or sent to.`,
    body: card(builder(session)),
  });
}

async function createAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const name = (form.get('name') ?? '').trim();
  if (!name || name.length > 200) throw validationError('Name: 1 to 200 characters');
  const filter = builtFilter(form);
  const s = await insertSegment(ctx.deps.sql, { orgId: session.org_id, name, filter });
  await audit(ctx, session, 'segment.created', { type: 'segment', id: s.id });
  redirect(ctx, hrefWith(`/console/segments/${s.id}`, { done: `Segment ${s.name} is created.` }));
}

async function loadSegment(ctx: ApiContext, session: SessionRow) {
  const id = ctx.params.id ?? '';
  const s = isId(id, 'seg') ? await findSegment(ctx.deps.sql, session.org_id, id) : null;
  if (!s) throw notFound('Segment');
  return s;
}

async function deleteConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const s = await loadSegment(ctx, session);
  confirmPage(ctx, session, {
    title: 'Delete this segment?',
    active: ACTIVE,
    question: html`<strong>${s.name}</strong> is deleted; its contacts are not. Broadcasts already sent to it keep their
      history.`,
    action: `/console/segments/${s.id}/delete`,
    confirmLabel: 'Delete segment',
    back: `/console/segments/${s.id}`,
    danger: true,
  });
}

async function deleteAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const s = await loadSegment(ctx, session);
  if (!(await deleteSegment(ctx.deps.sql, session.org_id, s.id))) throw notFound('Segment');
  await audit(ctx, session, 'segment.deleted', { type: 'segment', id: s.id });
  redirect(ctx, hrefWith(ACTIVE, { done: `Segment ${s.name} is deleted.` }));
}

/** Before `/segments/:id`, so that `new` is not taken for an id. */
export const SEGMENT_EDIT_PAGES: PageRule[] = [
  { method: 'GET', path: '/segments/new', role: 'admin', page: newPage },
  { method: 'POST', path: '/segments', role: 'admin', page: createAction },
  { method: 'GET', path: '/segments/:id/delete', role: 'admin', page: deleteConfirm },
  { method: 'POST', path: '/segments/:id/delete', role: 'admin', page: deleteAction },
];
