// A raw SMTP client for tests: one command at a time, multi-line replies read whole, so a test
// sees exactly what the server answered (codes and texts).
import { connect, type Socket } from 'node:net';
import { sleep } from './wait.js';

export interface Reply {
  code: number;
  text: string;
}

/**
 * DATA's bytes on the wire for a message taken byte for byte (bare CR or LF, 8-bit, NUL kept):
 * a dot starting a line (after CRLF, RFC 5321 §4.5.2) doubled, CRLF added when the message does
 * not end with one, then the final dot. A dot after a bare LF is sent as it is, as a client
 * trying to smuggle a second message would. `storedAs` is what the server keeps.
 */
export function dataWire(message: Buffer): { wire: Buffer; storedAs: Buffer } {
  const parts: Buffer[] = [];
  let pos = 0;
  if (message[0] === 0x2e) parts.push(Buffer.from('.'));
  for (let nl = message.indexOf(0x0a); nl !== -1; nl = message.indexOf(0x0a, nl + 1)) {
    if (message[nl + 1] !== 0x2e || message[nl - 1] !== 0x0d) continue;
    parts.push(message.subarray(pos, nl + 1), Buffer.from('.'));
    pos = nl + 1;
  }
  parts.push(message.subarray(pos));
  const ended = message.length >= 2 && message[message.length - 2] === 0x0d && message[message.length - 1] === 0x0a;
  const tail = ended ? '' : '\r\n';
  return {
    wire: Buffer.concat([...parts, Buffer.from(`${tail}.\r\n`)]),
    storedAs: Buffer.concat([message, Buffer.from(tail)]),
  };
}

export class RawSmtp {
  private buf = '';
  private waiting: ((r: Reply) => void) | null = null;
  private replies: Reply[] = [];

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buf += d;
      this.drain();
    });
  }

  static async open(port: number, host = '127.0.0.1'): Promise<{ client: RawSmtp; greeting: Reply }> {
    const socket = connect(port, host);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const client = new RawSmtp(socket);
    return { client, greeting: await client.next() };
  }

  private drain(): void {
    for (;;) {
      const lines = this.buf.split('\r\n');
      // A reply ends with a line "NNN text" (space after the code).
      const end = lines.findIndex((l) => /^\d{3}( |$)/.test(l));
      if (end < 0 || end === lines.length - 1) return;
      const replyLines = lines.slice(0, end + 1);
      this.buf = lines.slice(end + 1).join('\r\n');
      const reply = { code: Number(replyLines[end]!.slice(0, 3)), text: replyLines.map((l) => l.slice(4)).join('\n') };
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = null;
        w(reply);
      } else this.replies.push(reply);
    }
  }

  next(): Promise<Reply> {
    const r = this.replies.shift();
    if (r) return Promise.resolve(r);
    return new Promise((resolve) => (this.waiting = resolve));
  }

  async cmd(line: string): Promise<Reply> {
    this.socket.write(`${line}\r\n`);
    return await this.next();
  }

  /** Sends DATA, the message (dot-stuffed) and the final dot; returns the reply to the message. */
  async data(message: string): Promise<Reply> {
    const r = await this.cmd('DATA');
    if (r.code !== 354) return r;
    const body = message.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..');
    this.socket.write(`${body}${body.endsWith('\r\n') ? '' : '\r\n'}.\r\n`);
    return await this.next();
  }

  /** Sends DATA and the message's bytes as they are (dataWire); returns the reply to the message. */
  async dataBytes(message: Buffer): Promise<Reply> {
    const r = await this.cmd('DATA');
    if (r.code !== 354) return r;
    this.socket.write(dataWire(message).wire);
    return await this.next();
  }

  /** Replies that arrived without a command waiting for them (a server that answered twice). */
  unexpected(): Reply[] {
    return [...this.replies];
  }

  async close(): Promise<void> {
    try {
      this.socket.write('QUIT\r\n');
    } catch {
      // already closed
    }
    this.socket.end();
    await sleep(5);
    this.socket.destroy();
  }
}
