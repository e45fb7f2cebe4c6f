// `tern rbl check`: the reputation watch now (DESIGN §20; docs/operations.md "Reputation watch").
// Looks every sending address up in RBL_ZONES and every verified domain in DBL_ZONES, through
// DNS_SERVERS, records the answers and fires the events of what changed (the fan-out sends them
// within seconds), as the scheduled check does. Exit 0 when nothing is listed, 1 when something is.
import { createLogger } from '../../../shared/logger.js';
import { checkReputation, type TargetReport } from '../../../shared/reputation/watch.js';
import { CliError, type Command } from '../command.js';

function lines(r: TargetReport): string[] {
  const what = r.kind === 'ip' ? `${r.target} (${r.pool ? `pool ${r.pool}` : 'host'})` : r.target;
  const head = `${r.listed ? 'LISTED' : 'ok    '} ${what}`;
  return [head, ...r.zones.map((z) => `         ${z.zone}: ${z.status}${z.answer ? ` (${z.answer})` : ''}`)];
}

const rblCheck: Command = {
  name: 'rbl check',
  summary: 'look the sending addresses and verified domains up in the blocklists now',
  options: { json: { type: 'boolean', help: 'print {"checks":[{kind, target, pool, listed, zones}]} as JSON' } },
  async run(values, ctx) {
    const config = ctx.config();
    if (config.rblZones.length === 0 && config.dblZones.length === 0) {
      throw new CliError('nothing to check: set RBL_ZONES (and DBL_ZONES) to the blocklists to watch');
    }
    const reports = await checkReputation({ sql: ctx.sql(), config, logger: createLogger('silent', 'tern-cli') });
    const listed = reports.some((r) => r.listed);
    if (values.json) ctx.json({ checks: reports });
    else if (reports.length === 0)
      ctx.out('Nothing to check: no pool address, public host address or verified domain.');
    else for (const r of reports) for (const l of lines(r)) ctx.out(l);
    return listed ? 1 : 0;
  },
};

export const rblCommands: Command[] = [rblCheck];
