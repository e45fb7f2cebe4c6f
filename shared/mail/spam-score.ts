// Inbound scoring with rspamd (DESIGN §20; docs/inbound.md "Spam scoring"): the raw message is
// posted to rspamd's /checkv2 with what the MX saw of its envelope (client address, HELO, MAIL
// FROM, RCPT TO), and the answer becomes `spam: {score, action, symbols}`. rspamd down, slow or
// answering nonsense gives `{status: "unchecked"}`: the message is kept and handled as if no
// scorer were configured, never refused for the scorer's sake.

/** Longest wait for rspamd's answer. */
export const RSPAMD_TIMEOUT_MS = 10_000;

export interface SpamSymbol {
  name: string;
  score: number;
}

export type SpamVerdict = { score: number; action: string; symbols: SpamSymbol[] } | { status: 'unchecked' };

export interface ScoreInput {
  raw: Buffer;
  /** The connecting client's address (null: unknown, e.g. the HTTP intake). */
  ip: string | null;
  helo: string | null;
  mailFrom: string | null;
  rcptTo: string[];
}

/** True when the verdict has a score above `threshold`. */
export function isAbove(spam: SpamVerdict | null, threshold: number | undefined): boolean {
  return spam !== null && threshold !== undefined && 'score' in spam && spam.score > threshold;
}

function symbolsOf(v: unknown): SpamSymbol[] {
  if (!v || typeof v !== 'object') return [];
  return Object.values(v as Record<string, { name?: unknown; score?: unknown }>)
    .filter((s) => typeof s?.name === 'string')
    .map((s) => ({ name: s.name as string, score: typeof s.score === 'number' ? s.score : 0 }))
    .sort((a, b) => b.score - a.score || a.name.localeCompare(b.name));
}

/** Scores one message; never throws. `onError` hears why a message stayed unchecked. */
export async function scoreMessage(
  rspamdUrl: string,
  input: ScoreInput,
  onError: (reason: string) => void = () => undefined,
): Promise<SpamVerdict> {
  const headers: [string, string][] = [['content-type', 'message/rfc822']];
  if (input.ip) headers.push(['IP', input.ip]);
  if (input.helo) headers.push(['Helo', input.helo]);
  if (input.mailFrom) headers.push(['From', input.mailFrom]);
  for (const r of input.rcptTo) headers.push(['Rcpt', r]);
  try {
    const res = await fetch(new URL('checkv2', rspamdUrl.endsWith('/') ? rspamdUrl : `${rspamdUrl}/`), {
      method: 'POST',
      headers,
      body: input.raw,
      signal: AbortSignal.timeout(RSPAMD_TIMEOUT_MS),
    });
    if (!res.ok) {
      onError(`rspamd answered ${res.status}`);
      return { status: 'unchecked' };
    }
    const body = (await res.json()) as { score?: unknown; action?: unknown; symbols?: unknown };
    if (typeof body.score !== 'number' || typeof body.action !== 'string') {
      onError('rspamd answered without a score');
      return { status: 'unchecked' };
    }
    return {
      score: Math.round(body.score * 100) / 100,
      action: body.action,
      symbols: symbolsOf(body.symbols),
    };
  } catch (err) {
    onError((err as Error).message);
    return { status: 'unchecked' };
  }
}
