// What `npm start` prints once the stack answers (DESIGN §12), in this order: URLs, the console
// login, the keys (id + token), the delivery mode, the development conveniences, and three lines
// that send a first email as printed (curl, the `resend` SDK, the SMTP relay). Keys and the
// password exist only on the first run; later runs say how to mint a key instead.
import type { CreatedDemo } from '../../../shared/bootstrap.js';
import type { Config } from '../../../shared/config.js';
import type { ProbeResult } from '../../../shared/mail/outbound/probe.js';
import { redactUrl } from '../command.js';

export interface BannerInput {
  config: Pick<Config, 'port' | 'relayPort' | 'mxPort' | 'smtpSmarthost' | 'relayTlsCert'>;
  /** The demo organization as created by this (first) run, with its secrets. */
  created: CreatedDemo | null;
  /** The demo organization of an earlier run (no secrets), when there is one. */
  demo: { orgId: string; domain: string; adminEmail: string } | null;
  mode: ProbeResult | null;
  conveniences: string[];
  /** The relay's self-signed certificate, relative to the checkout (the relay line trusts it). */
  relayCertPath: string;
}

const SUBJECT = 'Hello from Tern';

/** One shell word: single-quoted, with embedded single quotes escaped. */
function sq(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function deliveryLine(mode: ProbeResult | null, smarthost: string | null): string {
  if (!mode) return 'Delivery     not checked yet';
  if (mode.mode === 'smarthost') {
    const url = redactUrl(smarthost ?? '');
    return mode.ok
      ? `Delivery     smarthost ${url} (answered EHLO)`
      : `Delivery     smarthost ${url}: not answering (${mode.detail}); live mail waits and retries until it does`;
  }
  if (mode.ok)
    return `Delivery     direct to MX (port ${mode.target.split(':').pop()} reachable: ${mode.target} answered EHLO)`;
  return (
    `Delivery     test keys only: no outbound SMTP here (${mode.target}: ${mode.detail}).\n` +
    '             Live mail would wait and retry; to send it, set SMTP_SMARTHOST=smtp://user:password@host:587'
  );
}

/** The three copy-paste lines of the first run, as shell lines (comments name each one). */
export function firstEmailLines(input: BannerInput, created: CreatedDemo): string[] {
  const api = `http://localhost:${input.config.port}/api/v1`;
  const from = `Demo <hello@${created.domain.name}>`;
  const token = created.testKey.token;
  const body = JSON.stringify({ from, to: 'you@example.com', subject: SUBJECT, text: 'It works.' });
  const sdk =
    `const {Resend}=require('resend');` +
    `new Resend('${token}',{baseUrl:'${api}'}).emails.send(` +
    `{from:'${from}',to:'you@example.com',subject:'${SUBJECT}',html:'<p>It works.</p>'})` +
    `.then(r=>console.log(r.data??r.error))`;
  const tls = input.config.relayTlsCert ? '' : `,tls:{ca:require('fs').readFileSync('${input.relayCertPath}')}`;
  const relay =
    `require('nodemailer').createTransport({host:'localhost',port:${input.config.relayPort},` +
    `auth:{user:'${created.testKey.id}',pass:'${token}'}${tls}}).sendMail(` +
    `{from:'${from}',to:'you@example.com',subject:'${SUBJECT} over SMTP',text:'It works.'})` +
    `.then(i=>console.log(i.response))`;
  return [
    'Send a first email with the test key, from the demo domain (run these in this folder):',
    '  # curl',
    `  curl -s ${api}/emails -H ${sq(`Authorization: Bearer ${token}`)} -H 'Content-Type: application/json' -d ${sq(body)}`,
    `  # the resend SDK (installed by npm ci), base URL ${api}`,
    `  node -e "${sdk}"`,
    '  # the SMTP relay (nodemailer; username = key id, password = token)',
    `  node -e "${relay}"`,
    'Then read its MIME (raw_url of GET /emails/{id}) or open the console:',
    `  curl -s ${api}/emails/<id>/raw -H ${sq(`Authorization: Bearer ${token}`)}`,
  ];
}

export function bannerLines(input: BannerInput): string[] {
  const { config, created, demo } = input;
  const lines = [
    '',
    'Tern is running (development launcher):',
    `  API         http://localhost:${config.port}/api/v1`,
    `  Console     http://localhost:${config.port}/console`,
    `  SMTP relay  localhost:${config.relayPort}  (STARTTLS; username: key id, password: key token)`,
    `  MX          localhost:${config.mxPort}`,
    `  Metrics     http://localhost:${config.port}/metrics  (Prometheus; health: /healthz?verbose=1)`,
    '',
  ];
  if (created) {
    lines.push(
      `Console login  ${created.user.email}  password: ${created.user.password}`,
      'Keys (shown only this once; the id is the SMTP username):',
      `  ADMIN key  ${created.key.id}  ${created.key.token}`,
      `  Test key   ${created.testKey.id}  ${created.testKey.token}  (SEND, test mode: nothing leaves the machine)`,
    );
  } else {
    lines.push(
      demo
        ? `Console login  ${demo.adminEmail}  (its password was shown on the first run; a new one: npm run tern -- user reset-password --email ${demo.adminEmail})`
        : 'Console login  the admin of your organization',
    );
    lines.push(
      demo
        ? `Keys are shown only when minted. A new test key: npm run tern -- key mint --org ${demo.orgId} --permission SEND --mode test`
        : 'Keys are shown only when minted: npm run tern -- key mint --org <org_id> --permission SEND --mode test',
    );
  }
  lines.push('', deliveryLine(input.mode, config.smtpSmarthost), '');
  if (input.conveniences.length > 0) {
    lines.push('Development conveniences (npm start only; the Procfile processes have none of them):');
    for (const c of input.conveniences) lines.push(`  - ${c}`);
    lines.push('');
  }
  if (created) lines.push(...firstEmailLines(input, created), '');
  lines.push('Ctrl-C stops it.');
  return lines;
}
