import { expect } from 'chai';
import { request } from 'undici';

// A browser stand-in for the console: keeps the session and device cookies, never follows
// redirects (tests look at them), posts url-encoded forms and remembers the CSRF token of the
// last page it saw.
export interface ConsoleResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  location: string | null;
  setCookie: string[];
}

export class ConsoleClient {
  cookie: string | null = null;
  /** The device cookie a sign-in left (console_device=…), sent with every request. */
  device: string | null = null;
  csrf: string | null = null;

  constructor(readonly base: string) {}

  async get(path: string): Promise<ConsoleResponse> {
    return await this.send('GET', path);
  }

  /** Posts a form; `_csrf` is added from the last page unless the fields carry their own. */
  async post(
    path: string,
    fields: Record<string, string | string[]> = {},
    opts: { csrf?: boolean; headers?: Record<string, string> } = {},
  ): Promise<ConsoleResponse> {
    const body = new URLSearchParams();
    if (opts.csrf !== false && this.csrf && !('_csrf' in fields)) body.append('_csrf', this.csrf);
    for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    return await this.send('POST', path, body.toString(), opts.headers);
  }

  /** Posts multipart/form-data (a file upload); `_csrf` is added from the last page unless `csrf` is false. */
  async postMultipart(
    path: string,
    fields: Record<string, string>,
    file: { field: string; filename: string; content: string | Buffer; type?: string },
    opts: { csrf?: boolean } = {},
  ): Promise<ConsoleResponse> {
    const fd = new FormData();
    if (opts.csrf !== false && this.csrf && !('_csrf' in fields)) fd.append('_csrf', this.csrf);
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    fd.append(file.field, new Blob([file.content], { type: file.type ?? 'text/csv' }), file.filename);
    // The Fetch API writes the multipart body and its boundary; the bytes go out through `send`.
    const req = new Request('http://localhost/', { method: 'POST', body: fd });
    const body = Buffer.from(await req.arrayBuffer());
    return await this.send('POST', path, body, { 'content-type': req.headers.get('content-type')! });
  }

  async login(email: string, password: string): Promise<ConsoleResponse> {
    const res = await this.post('/console/login', { email, password }, { csrf: false });
    if (res.status === 303) await this.get('/console');
    return res;
  }

  private async send(
    method: string,
    path: string,
    body?: string | Buffer,
    extra: Record<string, string> = {},
  ): Promise<ConsoleResponse> {
    const headers: Record<string, string> = { ...extra };
    const cookies = [this.cookie, this.device].filter((c) => c !== null);
    if (cookies.length > 0) headers.cookie = cookies.join('; ');
    if (body !== undefined) headers['content-type'] ??= 'application/x-www-form-urlencoded';
    // undici's request, not fetch: fetch drops a hand-set Origin header, which the tests need.
    const res = await request(`${this.base}${path}`, { method: method as 'GET' | 'POST', headers, body });
    const text = await res.body.text();
    const raw = res.headers['set-cookie'];
    const setCookie = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    for (const c of setCookie) {
      const pair = c.split(';')[0]!;
      if (pair.startsWith('console_device=')) {
        this.device = pair;
        continue;
      }
      this.cookie = pair === 'console_session=' || /Max-Age=0/.test(c) ? null : pair;
    }
    const token = /name="_csrf" value="([^"]+)"/.exec(text);
    if (token) this.csrf = token[1]!;
    const location = res.headers.location;
    return {
      status: res.statusCode,
      headers: res.headers,
      text,
      location: typeof location === 'string' ? location : null,
      setCookie,
    };
  }
}

/** Asserts a console error page: its status and the error code it shows (`data-error`). */
export function expectPageError(res: ConsoleResponse, status: number, code: string): void {
  expect(res.status, res.text).to.equal(status);
  expect(res.text).to.contain(`data-error="${code}"`);
}
