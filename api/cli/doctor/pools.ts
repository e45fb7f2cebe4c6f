// The IP pools' addresses (DESIGN §14), when the install has pools: each address is one of this
// host's (outbound connections bind it), and has forward-confirmed reverse DNS naming the pool's
// EHLO name (HELO_NAME when the pool has none). A pool assigned to nothing carries no mail.
import type { Resolver } from 'node:dns/promises';
import { createServer } from 'node:net';
import type { ToolConfig } from '../../../shared/config.js';
import { listPools } from '../../../shared/db/ip-pools.js';
import type { Sql } from '../../../shared/db/pool.js';
import { fail, ok, warn, type Check } from './check.js';
import { clean, confirmedReverseDns } from './outbound.js';

/** Null when the address can be bound here, else the error code (EADDRNOTAVAIL: not this host's). */
function bindError(address: string): Promise<string | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen(0, address, () => server.close(() => resolve(null)));
  });
}

export async function poolChecks(sql: Sql, config: ToolConfig, resolver: Resolver): Promise<Check[]> {
  const pools = await listPools(sql);
  const checks: Check[] = [];
  for (const pool of pools) {
    if (pool.assignments.length === 0) {
      checks.push(
        warn(
          `pool ${pool.name}`,
          'assigned to nothing: no mail leaves from it',
          `tern pool assign --pool ${pool.name} (--org … | --domain … | --stream …), or tern pool remove --name ${pool.name}`,
        ),
      );
    }
    const helo = clean(pool.ehlo ?? config.heloName);
    for (const { address } of pool.addresses) {
      const code = await bindError(address);
      if (code) {
        checks.push(
          fail(
            `pool ${pool.name} ${address}`,
            `${address} cannot be bound on this host (${code})`,
            `add ${address} to a network interface of every worker host, or remove the pool`,
          ),
        );
        continue;
      }
      checks.push(ok(`pool ${pool.name} ${address}`, `${address} is an address of this host`));
      checks.push(
        await confirmedReverseDns(address, helo, resolver, {
          source: pool.ehlo ? `pool ${pool.name}'s EHLO name` : 'HELO_NAME',
          rename: (ptr) => `tern pool add --name ${pool.name} --ip ${address} --ehlo ${ptr}`,
        }),
      );
    }
  }
  return checks;
}
