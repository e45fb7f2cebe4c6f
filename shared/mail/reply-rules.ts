// What a receiving server meant by its reply, as a category independent of the reply class
// (4xx or 5xx): classify.ts turns the category into an outcome. Enhanced status codes
// (RFC 3463) decide first; the text decides only where the code is generic (x.0.0, 5.5.0,
// 5.7.1, …) or absent, because the same words ("mailbox unavailable") mean a missing user at
// one provider and a sender block at another.

export type Category =
  | 'no_email' // the address does not exist
  | 'address' // another permanent fault of the address itself (disabled, bad domain, moved)
  | 'mailbox_full'
  | 'too_large'
  | 'auth' // DMARC / SPF / DKIM / unauthenticated sender
  | 'content' // spam or policy verdict on the message
  | 'spam_block' // provider refuses mail it judges unsolicited: content, but counted as a block
  | 'attachment'
  | 'block' // sending IP or domain blocked: blocklists, reputation, PTR
  | 'throttle' // rate limiting of the sender: slow down
  | 'greylist'
  | 'sender' // policy about the sender or relay (not authorized, sender verify, relay denied)
  | 'protocol'
  | 'network' // routing, DNS or connection trouble on the receiving side
  | 'server'; // the receiving system itself (resources, local error)

/** Hard categories: only these may suppress an address. */
export const ADDRESS_CATEGORIES: ReadonlySet<Category> = new Set(['no_email', 'address']);

export interface EnhancedParts {
  klass: number;
  subject: number;
  detail: number;
}

export function splitEnhanced(enhanced: string | null): EnhancedParts | null {
  const m = enhanced ? /^([245])\.(\d{1,3})\.(\d{1,3})$/.exec(enhanced) : null;
  return m ? { klass: Number(m[1]), subject: Number(m[2]), detail: Number(m[3]) } : null;
}

/** A category read off a specific enhanced code; null when the code is generic and the text must decide. */
export function categoryFromEnhanced(enhanced: string | null): Category | null {
  const parts = splitEnhanced(enhanced);
  if (!parts) return null;
  const { klass, subject, detail } = parts;
  switch (subject) {
    case 1:
      if (detail === 1 || detail === 10) return 'no_email';
      if (detail === 7 || detail === 8) return 'sender'; // the sender's address, not the recipient's
      if (detail === 2 || detail === 3 || detail === 6) return 'address';
      return null;
    case 2:
      if (detail === 1) return 'address'; // mailbox disabled, not accepting messages
      if (detail === 2) return 'mailbox_full';
      if (detail === 3) return 'too_large';
      return null;
    case 3:
      if (detail === 4) return 'too_large';
      if (detail === 0) return null;
      return 'server';
    case 4:
      if (detail === 0 || detail === 1) return null; // 5.4.1: Exchange Online's "Recipient address rejected"
      return 'network';
    case 5:
      return detail === 0 ? null : 'protocol';
    case 6:
      return 'content';
    case 7:
      return categoryFromSecurityCode(klass, detail);
    default:
      return null;
  }
}

function categoryFromSecurityCode(klass: number, detail: number): Category | null {
  if (detail === 13 || detail === 17 || detail === 18) return 'address'; // account disabled, owner changed
  if (detail === 28) return 'throttle'; // Gmail: unusual rate of unsolicited mail
  if (detail === 25) return 'block'; // no PTR record for the sending IP
  if ((detail >= 20 && detail <= 27) || detail === 9) return 'auth'; // 5.7.9 Yahoo/AOL: unauthenticated
  // Microsoft 365: 4.7.500–699 are "try again later" throttles; 5.7.606–750 banned IPs and tenants.
  if (klass === 4 && detail >= 500 && detail <= 699) return 'throttle';
  if (klass === 5 && detail >= 606 && detail <= 750) return 'block';
  return null;
}

const RULES: { category: Category; re: RegExp }[] = [
  {
    category: 'throttle',
    re: /rate[ -]?limit|unusual rate|too many (messages|connections|concurrent|emails|mails)|throttl|temporarily deferred|unexpected volume|exceeded (the )?(rate|sending|permitted|connection)|\b(TSS0\d|RP-00[12])\b|server busy/i,
  },
  {
    category: 'block',
    re: /spamhaus|spamcop|barracuda|sorbs|uceprotect|proofpoint|\bdnsbl\b|\brbl\b|block ?list|black ?list|deny ?list|blocked using|\blisted (at|in|on|by)\b|reputation|banned|permanently deferred|user complaints|not accepted from (this|your) ip|connections will not be accepted|cannot find your (reverse )?hostname|ptr record|reverse dns|\[?\b(S3150|S3140|S3115|SC-00\d|DY-00\d|OU-00\d|TS0\d|PH0\d|CS0\d|HM0\d|BL2\d)\b\]?/i,
  },
  { category: 'spam_block', re: /unsolicited/i },
  { category: 'greylist', re: /gr[ae]y ?list/i },
  {
    category: 'auth',
    re: /\bdmarc\b|\bspf\b|\bdkim\b|unauthenticated|authentication (checks|information)|fails? to pass authentication/i,
  },
  {
    category: 'mailbox_full',
    re: /over ?quota|quota (exceeded|full)|mailbox (is )?full|insufficient storage|out of storage|exceeded (its|the) storage/i,
  },
  {
    category: 'too_large',
    re: /too (large|big)|size limit|exceeds? (the )?(maximum|fixed|message) (permitted )?(message )?size|message size exceeds|size exceeds/i,
  },
  { category: 'attachment', re: /attachment|file type/i },
  { category: 'content', re: /spam|virus|malware|phishing|content|policy reasons|malformed/i },
  {
    category: 'sender',
    re: /sender (address )?(rejected|denied|verify)|verification failed|bad (outbound )?sender|not authori[sz]ed|authentication required|relay(ing)? (access )?(denied|not permitted)|administrative prohibition/i,
  },
  {
    category: 'no_email',
    re: /user unknown|unknown (user|recipient)|no such (user|mailbox|recipient|address)|does ?n[o']t exist|not exist|recipient ?not ?found|recip ?not ?found|invalid (recipient|mailbox)|mailbox (not found|unavailable|does not)|no mailbox|doesn't have an? \S+ account|address rejected: access denied|user not found/i,
  },
  {
    category: 'address',
    re: /(account|mailbox|user) (has been |is )?(disabled|deactivated|inactive)|unrouteable address|unroutable address|no longer (active|valid)/i,
  },
  {
    category: 'network',
    re: /connection (dropped|timed out|reset|lost)|timeout|dns (lookup )?(failure|error)|host not found|unable to route/i,
  },
  {
    category: 'server',
    re: /insufficient system|system (storage|resources)|local (error|problem)|try (again )?later/i,
  },
];

/** The first category whose words appear in `text`; null when nothing is recognised. */
export function categoryFromText(text: string): Category | null {
  for (const rule of RULES) if (rule.re.test(text)) return rule.category;
  return null;
}
