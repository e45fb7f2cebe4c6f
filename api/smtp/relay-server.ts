// The SMTP submission relay (DESIGN §10): AUTH PLAIN/LOGIN with an API key (username = key id,
// password = token, checked by the Authenticator that serves GET /keys/me), after STARTTLS unless
// RELAY_ALLOW_INSECURE_AUTH is set. Each message spends one token of the key's rate-limit bucket
// and passes the sending rules of POST /emails on the envelope sender (MAIL FROM) and the From
// header (DATA); the key is looked up again (from cache) for every message, so a revocation or a
// pause reaches open sessions. The size limit is enforced on the data stream: a message over it
// is read to its end, discarded and answered 552; it is never stored truncated.
import {
  SMTPServer,
  type SMTPServerAddress,
  type SMTPServerAuthentication,
  type SMTPServerDataStream,
  type SMTPServerSession,
} from 'smtp-server';
import type { AuthContext, Authenticator } from '../../shared/auth.js';
import type { Config } from '../../shared/config.js';
import { sessionsCloseMs } from '../../shared/shutdown.js';
import { parseAddress, type Mailbox } from '../../shared/mail/addresses.js';
import { MAX_RECIPIENTS_PER_FIELD } from '../schemas/emails.js';
import { acceptMessage, admitSender, type AcceptDeps } from './relay-accept.js';
import { SmtpError, smtpErrors } from './relay-errors.js';
import { countSession, counted } from './smtp-metrics.js';

export interface RelayDeps extends AcceptDeps {
  config: Config;
  auth: Authenticator;
}

export interface RelayServerOptions {
  key: Buffer | string;
  cert: Buffer | string;
  /** Implicit TLS (SMTPS) instead of STARTTLS. */
  secure?: boolean;
}

/** To, Cc and Bcc of POST /emails each take this many; an envelope may carry all three. */
export const MAX_ENVELOPE_RECIPIENTS = 3 * MAX_RECIPIENTS_PER_FIELD;

interface RelayState {
  token: string | null;
  mailFrom: Mailbox | null;
  rcptTo: Mailbox[];
}

function stateOf(session: SMTPServerSession): RelayState {
  const s = session as SMTPServerSession & { tern?: RelayState };
  s.tern ??= { token: null, mailFrom: null, rcptTo: [] };
  return s.tern;
}

/** Reads the whole data stream, keeping at most `max` bytes (the rest is drained, not stored). */
async function readLimited(stream: SMTPServerDataStream, max: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size <= max) chunks.push(buf);
  }
  return stream.sizeExceeded || size > max ? null : Buffer.concat(chunks, size);
}

/** Any failure that is not one of ours becomes a temporary refusal (the client retries). */
function reply(deps: RelayDeps, event: string, callback: (err?: Error | null) => void) {
  return (err: unknown) => {
    if (err instanceof SmtpError) return callback(err);
    deps.logger.error({ event, err }, 'relay command failed');
    callback(smtpErrors.temporary());
  };
}

async function currentAuth(deps: RelayDeps, session: SMTPServerSession): Promise<AuthContext> {
  const token = stateOf(session).token;
  if (!token) throw smtpErrors.authRequired();
  const result = await deps.auth.authenticate(token);
  if (!result.ok) throw smtpErrors.authFailed();
  return result.auth;
}

async function login(deps: RelayDeps, auth: SMTPServerAuthentication, session: SMTPServerSession) {
  const username = (auth.username ?? '').trim();
  const token = auth.password ?? '';
  const result = await deps.auth.authenticate(token);
  if (!result.ok || result.auth.key.id !== username) {
    deps.logger.info(
      { keyId: username, reason: result.ok ? 'username_mismatch' : result.reason, remote: session.remoteAddress },
      'relay AUTH refused',
    );
    throw smtpErrors.authFailed();
  }
  deps.auth.noteUse(result.auth.key.id);
  stateOf(session).token = token;
  return { user: result.auth.key.id };
}

export function createRelayServer(deps: RelayDeps, opts: RelayServerOptions): SMTPServer {
  const { config } = deps;
  return new SMTPServer({
    name: config.mxHost,
    banner: 'Tern relay',
    secure: opts.secure ?? false,
    key: opts.key,
    cert: opts.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: config.relayAllowInsecureAuth,
    authRequiredMessage: '5.7.0 Authentication required',
    // Our replies carry their own enhanced codes (5.7.1, 4.7.1 …); smtp-server's automatic ones
    // would contradict them.
    hideENHANCEDSTATUSCODES: true,
    hideDSN: true,
    size: config.relayMaxBytes,
    maxClients: config.relayMaxClients,
    logger: false,
    // Shutdown: open sessions get this long to finish (within SHUTDOWN_GRACE_SECONDS).
    closeTimeout: sessionsCloseMs(config),
    onConnect: countSession(deps.prom, 'relay'),
    onAuth(auth, session, done) {
      const callback = counted(deps.prom, 'relay', done);
      login(deps, auth, session).then(
        (user) => callback(null, user),
        (err: unknown) => {
          if (err instanceof SmtpError) return callback(err);
          deps.logger.error({ event: 'RELAY_AUTH_FAILED', err }, 'relay AUTH could not be checked');
          callback(new SmtpError(454, '4.7.0', 'Temporary authentication failure'));
        },
      );
    },
    onMailFrom(address: SMTPServerAddress, session, done) {
      const callback = counted(deps.prom, 'relay', done);
      const state = stateOf(session);
      state.mailFrom = null;
      state.rcptTo = [];
      currentAuth(deps, session)
        .then((auth) => admitSender(deps, auth, address.address))
        .then(
          (mailbox) => {
            state.mailFrom = mailbox;
            callback();
          },
          reply(deps, 'RELAY_MAIL_FROM_FAILED', callback),
        );
    },
    onRcptTo(address: SMTPServerAddress, session, done) {
      const callback = counted(deps.prom, 'relay', done);
      const state = stateOf(session);
      const parsed = parseAddress(address.address);
      if (!parsed.ok) return callback(smtpErrors.badRecipient(`Recipient address ${parsed.reason}`));
      if (state.rcptTo.length >= MAX_ENVELOPE_RECIPIENTS) {
        return callback(smtpErrors.tooManyRecipients(MAX_ENVELOPE_RECIPIENTS));
      }
      state.rcptTo.push(parsed.mailbox);
      callback();
    },
    onData(stream, session, done) {
      const callback = counted(deps.prom, 'relay', done);
      const state = stateOf(session);
      readLimited(stream, config.relayMaxBytes)
        .then(async (raw) => {
          if (raw === null) throw smtpErrors.tooBig(config.relayMaxBytes);
          if (!state.mailFrom) throw smtpErrors.invalid('no sender');
          const auth = await currentAuth(deps, session);
          return await acceptMessage(deps, auth, { mailFrom: state.mailFrom, rcptTo: state.rcptTo }, raw);
        })
        .then((id) => callback(null, `2.0.0 Ok: queued as ${id}`), reply(deps, 'RELAY_DATA_FAILED', callback));
    },
  });
}
