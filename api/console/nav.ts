// The console's navigation: one list, grouped, named as the pages are (DESIGN §13). A page that
// exists gets a row here (and its routes in its module's page table); members do not see the
// entries that are for admins only.
import type { SessionRow } from '../../shared/db/users.js';

export interface NavEntry {
  path: string;
  /** The page's name: the link's text and the page's <h1>. */
  label: string;
  section: 'Sending' | 'Audience' | 'Insights' | 'Settings' | null;
  admin: boolean;
}

export const NAV: NavEntry[] = [
  { path: '/console', label: 'Overview', section: null, admin: false },
  { path: '/console/emails', label: 'Emails', section: 'Sending', admin: false },
  { path: '/console/suppressions', label: 'Suppressions', section: 'Sending', admin: false },
  { path: '/console/templates', label: 'Templates', section: 'Sending', admin: false },
  { path: '/console/broadcasts', label: 'Broadcasts', section: 'Sending', admin: false },
  { path: '/console/automations', label: 'Automations', section: 'Sending', admin: false },
  { path: '/console/inbound', label: 'Inbound', section: 'Sending', admin: false },
  { path: '/console/contacts', label: 'Contacts', section: 'Audience', admin: false },
  { path: '/console/segments', label: 'Segments', section: 'Audience', admin: false },
  { path: '/console/metrics', label: 'Metrics', section: 'Insights', admin: false },
  { path: '/console/reputation', label: 'Reputation', section: 'Insights', admin: false },
  { path: '/console/queues', label: 'Queues', section: 'Insights', admin: true },
  { path: '/console/domains', label: 'Domains', section: 'Settings', admin: true },
  { path: '/console/webhooks', label: 'Webhooks', section: 'Settings', admin: true },
  { path: '/console/keys', label: 'API keys', section: 'Settings', admin: false },
  { path: '/console/users', label: 'Users', section: 'Settings', admin: true },
  { path: '/console/audit', label: 'Audit log', section: 'Settings', admin: true },
  { path: '/console/logs', label: 'Request log', section: 'Settings', admin: true },
  { path: '/console/settings', label: 'Settings', section: 'Settings', admin: true },
  { path: '/console/account', label: 'Account', section: 'Settings', admin: false },
];

/** The entries this user may open, in order, grouped by section. */
export function navFor(session: SessionRow): { section: NavEntry['section']; entries: NavEntry[] }[] {
  const groups: { section: NavEntry['section']; entries: NavEntry[] }[] = [];
  for (const n of NAV) {
    if (n.admin && session.role !== 'admin') continue;
    const last = groups.at(-1);
    if (last && last.section === n.section) last.entries.push(n);
    else groups.push({ section: n.section, entries: [n] });
  }
  return groups;
}
