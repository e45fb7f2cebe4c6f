// The webhook pages' form and query checks (api/console/webhooks.ts): event types (the API's
// list, shared/events.ts), the description, the delivery log's filter and a replay's time range.
// Each failure is a validation error naming the field as the page shows it.
import type { DeliveryStatus } from '../../shared/db/webhook-deliveries.js';
import { validationError } from '../../shared/errors.js';
import { WEBHOOK_EVENT_TYPES } from '../../shared/events.js';
import { queryString } from './ui.js';

export const STATUSES: DeliveryStatus[] = ['pending', 'succeeded', 'failed'];

export function eventsOf(form: URLSearchParams): string[] {
  const events = [...new Set(form.getAll('events'))];
  const bad = events.find((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (bad !== undefined) throw validationError(`"${bad}" is not an event type`);
  if (events.length === 0) throw validationError('Choose at least one event type');
  return events;
}

export function description(form: URLSearchParams): string | null {
  const d = (form.get('description') ?? '').trim();
  if (d.length > 500) throw validationError('Description is longer than 500 characters');
  return d || null;
}

export interface LogQuery {
  status: DeliveryStatus | '';
  type: string;
}

export function logQuery(query: Record<string, unknown>): LogQuery {
  const status = queryString(query, 'status') as DeliveryStatus;
  const type = queryString(query, 'type');
  return {
    status: STATUSES.includes(status) ? status : '',
    type: (WEBHOOK_EVENT_TYPES as readonly string[]).includes(type) ? type : '',
  };
}

/** A datetime-local value (read as UTC) or an ISO time. */
function instant(raw: string | null, label: string): Date {
  const v = (raw ?? '').trim();
  const d = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v) ? new Date(`${v}Z`) : new Date(v);
  if (!v || Number.isNaN(d.getTime())) throw validationError(`${label} is not a date and time`);
  return d;
}

export function replayRange(params: { get(k: string): string | null }): { from: Date; to: Date } {
  const from = instant(params.get('from'), 'Failed from');
  const to = instant(params.get('to'), 'Failed until');
  if (to <= from) throw validationError('Failed until must be after Failed from');
  return { from, to };
}
