// The request log's rows (DESIGN §21; api/middleware/request-log.ts writes them, GET /logs reads).
import { newId } from '../ids.js';
import type { Mode } from '../keys.js';
import { pagedRows } from './contacts.js';
import type { Page } from './keys.js';
import { jsonParam } from './params.js';
import type { Db } from './pool.js';

export interface RequestLogRow {
  id: string;
  org_id: string;
  key_id: string | null;
  mode: Mode;
  request_id: string;
  method: string;
  path: string;
  route: string;
  query: string;
  status: number;
  ip: string | null;
  user_agent: string | null;
  duration_ms: number;
  request_body: unknown;
  response_body: unknown;
  created_at: Date;
}

export type NewRequestLog = Omit<RequestLogRow, 'id' | 'created_at'>;

export async function insertRequestLog(db: Db, r: NewRequestLog): Promise<string> {
  const id = newId('log');
  await db`
    insert into request_logs (id, org_id, key_id, mode, request_id, method, path, route, query, status, ip,
                              user_agent, duration_ms, request_body, response_body)
    values (${id}, ${r.org_id}, ${r.key_id}, ${r.mode}, ${r.request_id}, ${r.method}, ${r.path}, ${r.route},
            ${r.query}, ${r.status}, ${r.ip}, ${r.user_agent}, ${r.duration_ms},
            ${jsonParam(db, r.request_body)}::jsonb, ${jsonParam(db, r.response_body)}::jsonb)`;
  return id;
}

export interface RequestLogFilter {
  status?: number;
  /** A path prefix (`/api/v1/emails`). */
  path?: string;
  key_id?: string;
  /** Created at or after / before (ISO 8601). */
  since?: string;
  until?: string;
}

/** The organization's logs of one mode, newest first, filtered; fetches limit + 1 rows. */
export async function listRequestLogs(
  db: Db,
  orgId: string,
  mode: Mode,
  page: Page,
  f: RequestLogFilter,
): Promise<RequestLogRow[]> {
  const and = [
    f.status !== undefined ? db`and status = ${f.status}` : db``,
    f.path !== undefined ? db`and starts_with(path, ${f.path})` : db``,
    f.key_id !== undefined ? db`and key_id = ${f.key_id}` : db``,
    f.since !== undefined ? db`and created_at >= ${f.since}` : db``,
    f.until !== undefined ? db`and created_at < ${f.until}` : db``,
  ];
  return await pagedRows<RequestLogRow>(
    db,
    page,
    (cursor, order, limit) => db<RequestLogRow[]>`
      select * from request_logs
      where org_id = ${orgId} and mode = ${mode} ${and[0]!} ${and[1]!} ${and[2]!} ${and[3]!} ${and[4]!} ${cursor}
      ${order} limit ${limit}`,
  );
}

export async function getRequestLog(db: Db, orgId: string, mode: Mode, id: string): Promise<RequestLogRow | null> {
  const [row] = await db<RequestLogRow[]>`
    select * from request_logs where org_id = ${orgId} and mode = ${mode} and id = ${id}`;
  return row ?? null;
}

/**
 * The requests whose answer named the email (`POST /emails`, or an item of `POST /emails/batch`),
 * looked for in the minutes around its creation (the index on created_at bounds the scan).
 */
export async function requestLogsForEmail(
  db: Db,
  orgId: string,
  email: { id: string; created_at: Date },
): Promise<RequestLogRow[]> {
  return await db<RequestLogRow[]>`
    select * from request_logs
    where org_id = ${orgId}
      and created_at between ${email.created_at}::timestamptz - interval '1 minute'
                         and ${email.created_at}::timestamptz + interval '5 minutes'
      and (response_body ->> 'id' = ${email.id}
           or response_body -> 'data' @> ${jsonParam(db, [{ id: email.id }])}::jsonb)
    order by id desc limit 10`;
}
