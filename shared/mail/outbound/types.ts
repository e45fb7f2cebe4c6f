// What the outbound layer returns: SMTP outcomes are data, never exceptions (STYLE §7).
import type { ReplyClassification, SmtpReply } from '../classify.js';

export type { SmtpReply };
export type Classification = ReplyClassification;

export interface AttemptResult {
  kind: 'delivered' | 'deferred' | 'bounced';
  /** The server's reply, or null when none came (connection failure, DNS). */
  reply: SmtpReply | null;
  classification: Classification;
  /** One line for email_recipients.last_response: the reply, or what went wrong. */
  response: string;
  /** The host that answered (MX host or smarthost), when one did. */
  host: string | null;
  /** The MX host's name (or the smarthost's), when a session was had: `host` may be its address. */
  hostName?: string | null;
  /** The attempt's TLS: the session's (when one was had) under the domain's policy. */
  tls?: TlsFacts | null;
}

/** What an attempt's TLS was (DESIGN §19), recorded with it. */
export interface TlsFacts {
  /** The session's protocol (`TLSv1.3`); null: plaintext, or no session was had. */
  version: string | null;
  /** The session's cipher suite (OpenSSL name); null as `version`. */
  cipher: string | null;
  policy: 'mta-sts' | 'dane' | 'none';
  /**
   * The policy's mode (`enforce`, `testing`); without one, `verified` (the certificate is checked:
   * a smarthost) or `opportunistic` (any certificate, plaintext when STARTTLS is not offered).
   */
  mode: string;
}

export interface OutboundMessage {
  /** Caller's handle (the recipient id). */
  id: string;
  /** Envelope sender (VERP). */
  from: string;
  to: string;
  raw: Buffer;
}

export interface Target {
  /** Address dialled (MX host names are resolved through DNS_SERVERS, never the system resolver). */
  host: string;
  /** Name for TLS SNI and logs (the MX host name), when `host` is an address. */
  name?: string;
  port: number;
  /** Implicit TLS (smtps://). */
  secure: boolean;
  auth?: { user: string; pass: string };
  /** Verify the server certificate (smarthost) or accept any (opportunistic STARTTLS to an MX). */
  verifyTls: boolean;
  /** STARTTLS or nothing (never plaintext): an MX under an enforced policy (tls-policy.ts). */
  requireTls?: boolean;
  /** Trust anchors replacing Node's store for the certificate check (tls-policy.ts `trustAnchors`). */
  ca?: string[];
  /** The recipient domain's policy this host is reached under; absent: none. */
  tlsPolicy?: { policy: 'mta-sts'; mode: 'enforce' | 'testing' };
}

export interface Route {
  domain: string;
  /** Hosts in order of preference (one for a smarthost). */
  targets: Target[];
  /** MX host names (for provider detection); empty for a smarthost or an implicit MX. */
  mxHosts: string[];
  /** The one target is SMTP_SMARTHOST. */
  smarthost?: boolean;
  /** Set when the domain cannot receive mail at all, or DNS failed: every recipient gets it. */
  failure?: AttemptResult;
}

/** The local side of a connection: a pool address and the name said in EHLO from it. */
export interface Source {
  /** Address the connection binds to (IPv4 or IPv6). */
  localAddress: string;
  /** EHLO name; null: HELO_NAME. */
  ehlo: string | null;
}
