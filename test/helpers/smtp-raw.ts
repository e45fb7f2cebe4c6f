// A raw SMTP client for tests: one command at a time, multi-line replies read whole, so a test
// sees exactly what the server answered (codes and texts).
import { connect, type Socket } from 'node:net';

export interface Reply {
  code: number;
  text: string;
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

  async close(): Promise<void> {
    try {
      this.socket.write('QUIT\r\n');
    } catch {
      // already closed
    }
    this.socket.end();
    await new Promise((r) => setTimeout(r, 5));
    this.socket.destroy();
  }
}
