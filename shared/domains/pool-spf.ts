// The SPF record of a domain as shown and checked: it authorises this install's MX host (`a:`)
// and the addresses of the IP pools that can carry the domain's mail (`ip4:`/`ip6:`), read when
// the domain is shown, so assigning a pool changes what the API, the console and the DNS check
// expect. A stored SPF record that was verified with other addresses is shown `pending` until
// checked again (the domain itself stays verified: its DKIM and MX records did not change).
import { poolAddressesOfDomains } from '../db/ip-pools.js';
import type { Db } from '../db/pool.js';
import { spfWithAddresses, type DomainRecord } from './records.js';

interface WithRecords {
  id: string;
  records: unknown[];
}

function withSpf(records: DomainRecord[], addresses: string[]): DomainRecord[] {
  return records.map((r) => {
    if (r.record !== 'SPF') return r;
    const value = spfWithAddresses(r.value, addresses);
    if (value === r.value) return r;
    const { reason: _old, ...rest } = r;
    if (r.status !== 'verified') return { ...rest, value };
    const reason = 'The addresses of the IP pools changed: publish this value and verify again';
    return { ...rest, value, status: 'pending', reason };
  });
}

/** The rows with their SPF record naming the pool addresses that apply to each domain. */
export async function withPoolSpf<T extends WithRecords>(db: Db, rows: T[]): Promise<T[]> {
  const addresses = await poolAddressesOfDomains(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({ ...r, records: withSpf(r.records as DomainRecord[], addresses.get(r.id) ?? []) }));
}

export async function withPoolSpfOne<T extends WithRecords>(db: Db, row: T): Promise<T> {
  return (await withPoolSpf(db, [row]))[0]!;
}
