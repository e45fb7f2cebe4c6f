// Alert rules (DESIGN §5 Organization): after live bounces or complaints, each rule is checked
// over its window from the event log; a crossed `pause` rule pauses sending with a reason naming
// the rule, tells every web process to drop its cached org (auth invalidation channel) and fires
// `organization.paused` (shared/org-events.ts).
import { countOutcomes, pauseOrg } from '../../shared/db/delivery-sweep.js';
import type { AlertRule } from '../../shared/db/orgs.js';
import { fireOrgEvent } from '../../shared/org-events.js';
import type { WorkerDeps } from '../deps.js';

function parseRules(raw: unknown[]): AlertRule[] {
  return raw.filter((r): r is AlertRule => {
    const x = r as Partial<AlertRule>;
    return (
      (x.metric === 'bounce' || x.metric === 'complaint') &&
      typeof x.threshold === 'number' &&
      (x.action === 'pause' || x.action === 'notify')
    );
  });
}

export async function evaluateAlertRules(deps: WorkerDeps, orgId: string, rawRules: unknown[]): Promise<void> {
  const rules = parseRules(rawRules);
  for (const rule of rules) {
    const days = rule.window_days > 0 ? rule.window_days : 1;
    const c = await countOutcomes(deps.sql, orgId, days);
    if (c.sent === 0 || c.sent < (rule.min_volume ?? 0)) continue;
    const hits = rule.metric === 'bounce' ? c.bounced : c.complained;
    const rate = (hits / c.sent) * 100;
    if (rate < rule.threshold) continue;
    const reason =
      `alert rule: ${rule.metric} rate ${rate.toFixed(2)}% reached the ${rule.threshold}% threshold ` +
      `over ${days} day(s) (${hits} of ${c.sent} sent)`;
    if (rule.action === 'notify') {
      deps.logger.warn({ event: 'ALERT_RULE_CROSSED', orgId, rule, rate }, reason);
      continue;
    }
    if (await pauseOrg(deps.sql, orgId, reason)) {
      deps.logger.warn({ event: 'ALERT_RULE_PAUSED_SENDING', orgId, rule, rate }, reason);
      await deps.redis.publish(deps.redisKeys.authInvalidate, `org:${orgId}`);
      await fireOrgEvent(deps, {
        orgId,
        type: 'organization.paused',
        data: { reason, by: { type: 'alert_rule', metric: rule.metric, threshold: rule.threshold } },
      });
    }
    return;
  }
}
