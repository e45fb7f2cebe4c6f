// The mailbox provider behind a recipient (DESIGN §6, metrics facet=provider, per-provider
// throttling): consumer domains are known by name; hosted domains (Google Workspace,
// Microsoft 365, …) are recognised by the suffix of their MX hosts.

export const PROVIDERS = [
  { id: 'gmail', label: 'Gmail' },
  { id: 'outlook', label: 'Outlook' },
  { id: 'yahoo', label: 'Yahoo' },
  { id: 'apple', label: 'Apple iCloud' },
  { id: 'proton', label: 'Proton Mail' },
  { id: 'gmx', label: 'GMX' },
  { id: 'yandex', label: 'Yandex' },
  { id: 'zoho', label: 'Zoho' },
  { id: 'fastmail', label: 'Fastmail' },
  { id: 'other', label: 'Other' },
] as const;

export type ProviderId = (typeof PROVIDERS)[number]['id'];
export interface Provider {
  id: ProviderId;
  label: string;
}

const BY_ID = new Map<string, Provider>(PROVIDERS.map((p) => [p.id, p]));

// Exact consumer domains. Families with many country domains (hotmail.*, yahoo.*, gmx.*,
// yandex.*) are matched by their first label in FAMILY below.
const DOMAINS: Record<string, ProviderId> = {
  'gmail.com': 'gmail',
  'googlemail.com': 'gmail',
  'outlook.com': 'outlook',
  'live.com': 'outlook',
  'msn.com': 'outlook',
  'passport.com': 'outlook',
  'windowslive.com': 'outlook',
  'ymail.com': 'yahoo',
  'rocketmail.com': 'yahoo',
  'aol.com': 'yahoo', // AOL mail runs on Yahoo's platform
  'aim.com': 'yahoo',
  'verizon.net': 'yahoo',
  'icloud.com': 'apple',
  'me.com': 'apple',
  'mac.com': 'apple',
  'proton.me': 'proton',
  'protonmail.com': 'proton',
  'protonmail.ch': 'proton',
  'pm.me': 'proton',
  'ya.ru': 'yandex',
  'zoho.com': 'zoho',
  'zohomail.com': 'zoho',
  'zohomail.eu': 'zoho',
  'zoho.eu': 'zoho',
  'fastmail.com': 'fastmail',
  'fastmail.fm': 'fastmail',
};

const FAMILY: Record<string, ProviderId> = {
  hotmail: 'outlook',
  outlook: 'outlook',
  live: 'outlook',
  yahoo: 'yahoo',
  aol: 'yahoo',
  gmx: 'gmx',
  yandex: 'yandex',
};

// MX host suffixes of hosted mail, checked in order against each MX host name.
const MX_SUFFIXES: [suffix: string, id: ProviderId][] = [
  ['google.com', 'gmail'], // aspmx.l.google.com, alt1.aspmx.l.google.com, smtp.google.com
  ['googlemail.com', 'gmail'],
  ['mail.protection.outlook.com', 'outlook'],
  ['olc.protection.outlook.com', 'outlook'], // outlook.com / hotmail consumer MX
  ['outlook.com', 'outlook'],
  ['hotmail.com', 'outlook'],
  ['yahoodns.net', 'yahoo'],
  ['mail.icloud.com', 'apple'],
  ['protonmail.ch', 'proton'],
  ['proton.me', 'proton'],
  ['gmx.net', 'gmx'],
  ['gmx.com', 'gmx'],
  ['yandex.net', 'yandex'],
  ['yandex.ru', 'yandex'],
  ['zoho.com', 'zoho'],
  ['zoho.eu', 'zoho'],
  ['zoho.in', 'zoho'],
  ['zohomail.com', 'zoho'],
  ['messagingengine.com', 'fastmail'],
];

function normalize(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}

function byDomain(domain: string): ProviderId | null {
  const exact = DOMAINS[domain];
  if (exact) return exact;
  const [first, ...rest] = domain.split('.');
  // hotmail.co.uk, yahoo.fr, gmx.de, yandex.com.tr: a family name followed by a public suffix
  // of at most two labels (so "yahoo.acme.example" is not Yahoo's).
  if (first && rest.length >= 1 && rest.length <= 2 && rest.every((l) => /^[a-z]{2,3}$/.test(l))) {
    return FAMILY[first] ?? null;
  }
  return null;
}

function byMx(host: string): ProviderId | null {
  for (const [suffix, id] of MX_SUFFIXES) {
    if (host === suffix || host.endsWith(`.${suffix}`)) return id;
  }
  return null;
}

/** The provider for a recipient domain, from the domain itself first and then its MX hosts. */
export function providerOf(domain: string, mxHosts: readonly string[] = []): Provider {
  const id = byDomain(normalize(domain)) ?? mxHosts.map((h) => byMx(normalize(h))).find((p) => p !== null) ?? 'other';
  return BY_ID.get(id)!;
}

/** The human name of a provider id; unknown ids read as "Other". */
export function providerLabel(id: string): string {
  return (BY_ID.get(id) ?? BY_ID.get('other')!).label;
}
