// Which event moves which counter (DESIGN §8), and the rates derived from the counters.

import type { Counter, Counts } from '../db/metrics.js';
import type { EventRow } from '../events.js';

/**
 * The counters of series and totals with their API names: the spec's eight in its order (opened
 * and clicked count people), then the opens and clicks judged a machine's (DESIGN §20).
 */
export const SERIES_FIELDS = [
  ['sent', 'sent'],
  ['delivered', 'delivered'],
  ['bouncedHard', 'bounced_hard'],
  ['bouncedSoft', 'bounced_soft'],
  ['complained', 'complained'],
  ['opened', 'opened'],
  ['clicked', 'clicked'],
  ['unsubscribed', 'unsubscribed'],
  ['openedMachine', 'opened_machine'],
  ['clickedMachine', 'clicked_machine'],
] as const satisfies readonly (readonly [string, Counter])[];

/** `by` rows carry two more. */
export const FACET_FIELDS = [...SERIES_FIELDS, ['delayed', 'delayed'], ['blocked', 'blocked']] as const;

export type CountedEvent = Pick<EventRow, 'type' | 'bounce_type' | 'blocked'> & {
  /** An open or click judged a machine's (DESIGN §20). */
  machine?: boolean | null;
};

/**
 * The counters one live event adds. Opens and clicks are passed here only when they are the
 * recipient's first of their kind, person or machine (the caller decides, in the rollup
 * transaction). An undetermined bounce is
 * not an address fault, so it counts as soft.
 */
export function countersOf(e: CountedEvent): Partial<Counts> {
  const c: Partial<Counts> = {};
  switch (e.type) {
    case 'email.sent':
      c.sent = 1;
      break;
    case 'email.delivered':
      c.delivered = 1;
      break;
    case 'email.bounced':
      if (e.bounce_type === 'hard') c.bounced_hard = 1;
      else c.bounced_soft = 1;
      break;
    case 'email.complained':
      c.complained = 1;
      break;
    case 'email.opened':
      if (e.machine) c.opened_machine = 1;
      else c.opened = 1;
      break;
    case 'email.clicked':
      if (e.machine) c.clicked_machine = 1;
      else c.clicked = 1;
      break;
    case 'email.unsubscribed':
      c.unsubscribed = 1;
      break;
    case 'email.delivery_delayed':
      c.delayed = 1;
      break;
    default:
      break;
  }
  if (e.blocked) c.blocked = 1;
  return c;
}

function pct(n: number, d: number): number {
  return d === 0 ? 0 : Math.round((n / d) * 10000) / 100;
}

/** DESIGN §8: percentages rounded to 2 decimals, 0 when the denominator is 0. */
export function ratesOf(t: Counts) {
  return {
    delivery: pct(t.delivered, t.sent),
    bounce: pct(t.bounced_hard + t.bounced_soft, t.sent),
    hardBounce: pct(t.bounced_hard, t.sent),
    softBounce: pct(t.bounced_soft, t.sent),
    complaint: pct(t.complained, t.delivered),
    open: pct(t.opened, t.delivered),
    click: pct(t.clicked, t.delivered),
    openMachine: pct(t.opened_machine, t.delivered),
    clickMachine: pct(t.clicked_machine, t.delivered),
  };
}
