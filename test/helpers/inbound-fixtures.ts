// The DSN and ARF samples of test/fixtures/inbound (written after the public descriptions of
// each MTA's and provider's format) and what each must produce. Placeholders: {{VERP}} (the
// recipient's return path), {{RCPT}}, {{OTHER}} (a recipient that is not ours), {{FIXED}} (a
// complaint address on reply.<domain>), {{MESSAGE_ID}} (the original, without brackets).
import { readFileSync } from 'node:fs';
import type { SuppressionReason } from '../../shared/db/suppressions.js';

const FIXTURES = new URL('../fixtures/inbound/', import.meta.url);

export type Expected =
  | { type: 'email.bounced'; bounceType: 'hard' | 'soft' | 'undetermined'; detail: string }
  | { type: 'email.complained'; detail: string }
  | null;

export interface ReportFixture {
  file: string;
  /** The envelope recipient at the MX: the VERP return path or a fixed complaint address. */
  to: 'verp' | 'fixed';
  report: 'dsn' | 'arf' | null;
  expected: Expected;
  suppression: SuppressionReason | null;
}

const hard = (detail: string): Expected => ({ type: 'email.bounced', bounceType: 'hard', detail });
const soft = (detail: string): Expected => ({ type: 'email.bounced', bounceType: 'soft', detail });
const complaint: Expected = { type: 'email.complained', detail: 'abuse' };

export const REPORT_FIXTURES: ReportFixture[] = [
  {
    file: 'postfix-dsn-user-unknown.eml',
    to: 'verp',
    report: 'dsn',
    expected: hard('NoEmail'),
    suppression: 'hard_bounce',
  },
  {
    file: 'gmail-dsn-no-such-user.eml',
    to: 'verp',
    report: 'dsn',
    expected: hard('NoEmail'),
    suppression: 'hard_bounce',
  },
  {
    file: 'exchange-online-ndr-mailbox-full.eml',
    to: 'verp',
    report: 'dsn',
    expected: soft('MailboxFull'),
    suppression: null,
  },
  {
    file: 'exchange-onprem-ndr-recip-not-found.eml',
    to: 'verp',
    report: 'dsn',
    expected: hard('NoEmail'),
    suppression: 'hard_bounce',
  },
  { file: 'exim-dsn-failed.eml', to: 'verp', report: 'dsn', expected: hard('NoEmail'), suppression: 'hard_bounce' },
  {
    file: 'exim-bounce-no-report.eml',
    to: 'verp',
    report: null,
    expected: { type: 'email.bounced', bounceType: 'undetermined', detail: 'Undetermined' },
    suppression: null,
  },
  {
    file: 'yahoo-dsn-no-account.eml',
    to: 'verp',
    report: 'dsn',
    expected: hard('NoEmail'),
    suppression: 'hard_bounce',
  },
  {
    file: 'outlook-com-dsn-mailbox-unavailable.eml',
    to: 'verp',
    report: 'dsn',
    expected: hard('NoEmail'),
    suppression: 'hard_bounce',
  },
  { file: 'postfix-dsn-timeout-final.eml', to: 'verp', report: 'dsn', expected: soft('General'), suppression: null },
  { file: 'postfix-dsn-delayed.eml', to: 'verp', report: 'dsn', expected: null, suppression: null },
  { file: 'global-dsn-utf8.eml', to: 'verp', report: 'dsn', expected: hard('NoEmail'), suppression: 'hard_bounce' },
  {
    file: 'qp-encoded-dsn-disabled.eml',
    to: 'verp',
    report: 'dsn',
    expected: hard('General'),
    suppression: 'hard_bounce',
  },
  {
    file: 'postfix-dsn-multi-recipient.eml',
    to: 'verp',
    report: 'dsn',
    expected: soft('MailboxFull'),
    suppression: null,
  },
  { file: 'yahoo-arf-abuse.eml', to: 'verp', report: 'arf', expected: complaint, suppression: 'complaint' },
  { file: 'aol-arf-abuse.eml', to: 'verp', report: 'arf', expected: complaint, suppression: 'complaint' },
  { file: 'microsoft-jmrp-arf.eml', to: 'fixed', report: 'arf', expected: complaint, suppression: 'complaint' },
  { file: 'arf-fixed-address.eml', to: 'fixed', report: 'arf', expected: complaint, suppression: 'complaint' },
  { file: 'yahoo-arf-not-spam.eml', to: 'verp', report: 'arf', expected: null, suppression: null },
];

export function fixture(name: string, vars: Record<string, string>): string {
  let text = readFileSync(new URL(name, FIXTURES), 'utf8');
  for (const [k, v] of Object.entries(vars)) text = text.split(`{{${k}}}`).join(v);
  // SMTP and RFC 5322 want CRLF; the files are stored with LF.
  return text.replace(/\r?\n/g, '\r\n');
}
