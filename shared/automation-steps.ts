// Automation steps (DESIGN §5, §16): their types, durations (parsed by shared/durations.ts), and
// the step graph. Steps run in list order unless a step names the one that follows: `next` on any
// step but a condition, `then` / `else` on a condition, `on_timeout` on a wait_for_event; a
// target is a step's `id`, or "end". The graph has no loops (checkGraph refuses them), so a run
// visits each step at most once.
import type { PropertyValue } from './db/contacts.js';
import { validationError } from './errors.js';
import type { EmailEventType } from './events.js';
import { checkFilter, type Scalar, type SegmentFilter } from './segment-filter.js';
import { parseWait } from './durations.js';

/** A condition: the segment filter language plus segment membership and the last custom event. */
export type Condition =
  | { all: Condition[] }
  | { any: Condition[] }
  | { not: Condition }
  | { in_segment: string }
  | { last_event: { name?: string; within?: string; properties?: Record<string, Scalar> } }
  | { email_event: { type: EmailEventType; last?: boolean } }
  | Exclude<SegmentFilter, { all: unknown } | { any: unknown } | { not: unknown }>;

interface Flow {
  id?: string;
  next?: string;
}

export type AutomationStep =
  | (Flow & { wait: string })
  | (Flow & { send: { template: string; kind?: string; from: string; subject?: string } })
  | { id?: string; condition: Condition; then?: string; else?: string }
  | (Flow & { wait_for_event: { event: string; timeout: string }; on_timeout: string })
  | (Flow & {
      update_contact: {
        first_name?: string | null;
        last_name?: string | null;
        properties?: Record<string, PropertyValue>;
      };
    })
  | (Flow & { add_to_segment: string })
  | (Flow & { remove_from_segment: string })
  | (Flow & { webhook: { webhook_id: string; payload?: Record<string, unknown> } });

export const STEP_TYPES = [
  'wait',
  'send',
  'condition',
  'wait_for_event',
  'update_contact',
  'add_to_segment',
  'remove_from_segment',
  'webhook',
] as const;
export type StepType = (typeof STEP_TYPES)[number];

export const END = 'end';

/** The event type of the webhook step's calls. */
export const AUTOMATION_WEBHOOK_EVENT = 'automation.webhook';

/** The type of a step (the one step-type key it carries). */
export function stepType(step: AutomationStep): StepType {
  const t = STEP_TYPES.find((k) => k in step);
  if (!t) throw new Error('automation step without a type');
  return t;
}

/** The index a target leads to; `steps.length` for "end" (and for falling off the last step). */
export function targetIndex(steps: AutomationStep[], from: number, target: string | undefined): number {
  if (target === undefined) return from + 1;
  if (target === END) return steps.length;
  const i = steps.findIndex((s) => s.id === target);
  return i < 0 ? steps.length : i;
}

/** The targets a step can go on to, named by the field that holds each. */
function exits(step: AutomationStep): [string, string | undefined][] {
  if ('condition' in step)
    return [
      ['then', step.then],
      ['else', step.else],
    ];
  if ('wait_for_event' in step)
    return [
      ['next', step.next],
      ['on_timeout', step.on_timeout],
    ];
  return [['next', step.next]];
}

const TYPE_LIST = STEP_TYPES.join(', ');

/**
 * A condition's meaning beyond its shape: field operators, durations. Adds the segments it names
 * to `refs.segments` and the topics to `refs.topics` (with where each is named first).
 */
export function checkCondition(c: Condition, at: string, refs: Pick<GraphRefs, 'segments' | 'topics'>): void {
  if ('all' in c) return c.all.forEach((x, i) => checkCondition(x, `${at}.all.${i}`, refs));
  if ('any' in c) return c.any.forEach((x, i) => checkCondition(x, `${at}.any.${i}`, refs));
  if ('not' in c) return checkCondition(c.not, `${at}.not`, refs);
  if ('in_segment' in c) {
    refs.segments.add(c.in_segment);
    return;
  }
  if ('email_event' in c) return;
  if ('last_event' in c) {
    const w = c.last_event.within;
    if (w !== undefined && parseWait(w) === null) {
      throw validationError(`${at}.last_event.within must be a duration such as "7d" (at most a year)`);
    }
    return;
  }
  for (const topic of checkFilter(c, at)) if (!refs.topics.has(topic)) refs.topics.set(topic, `${at}.topic`);
}

export interface GraphRefs {
  segments: Set<string>;
  /** Topic id → the path of the condition that names it first (for a 422 message). */
  topics: Map<string, string>;
  webhooks: Set<string>;
  templates: { at: string; send: Extract<AutomationStep, { send: unknown }>['send'] }[];
}

/**
 * Checks the step graph and what the schema cannot: one type per step, unique ids, targets that
 * name a step, no loops, every step reachable, durations. Returns what the steps refer to (the
 * caller checks those exist in the organization). Errors name the step (`body.steps[i]`).
 */
export function checkGraph(steps: AutomationStep[], where = 'body.steps'): GraphRefs {
  const refs: GraphRefs = { segments: new Set(), topics: new Map(), webhooks: new Set(), templates: [] };
  const ids = new Map<string, number>();
  steps.forEach((step, i) => {
    const at = `${where}[${i}]`;
    const types = STEP_TYPES.filter((k) => k in step);
    if (types.length === 0) throw validationError(`${at} has no step type; a step is one of ${TYPE_LIST}`);
    if (types.length > 1) {
      throw validationError(`${at} has several step types (${types.join(', ')}); a step does one thing`);
    }
    const type = types[0]!;
    if (type !== 'condition' && ('then' in step || 'else' in step)) {
      throw validationError(`${at}: only a condition step takes then / else`);
    }
    if (type === 'condition' && 'next' in step) {
      throw validationError(`${at}: a condition step goes on with then / else, not next`);
    }
    if (type !== 'wait_for_event' && 'on_timeout' in step) {
      throw validationError(`${at}: only a wait_for_event step takes on_timeout`);
    }
    if (type === 'wait_for_event' && !('on_timeout' in step)) {
      throw validationError(`${at}.on_timeout is required (the step that follows when the event does not come)`);
    }
    if (step.id !== undefined) {
      if (step.id === END) throw validationError(`${at}.id "${END}" is reserved (it is the target that ends a run)`);
      const seen = ids.get(step.id);
      if (seen !== undefined) throw validationError(`${at}.id "${step.id}" is already the id of ${where}[${seen}]`);
      ids.set(step.id, i);
    }
    if ('wait' in step && parseWait(step.wait) === null) {
      throw validationError(`${at}.wait must be a duration such as "30s", "15m", "2h" or "3d" (at most a year)`);
    }
    if ('wait_for_event' in step && parseWait(step.wait_for_event.timeout) === null) {
      throw validationError(
        `${at}.wait_for_event.timeout must be a duration such as "30s", "15m", "2h" or "3d" (at most a year)`,
      );
    }
    if ('condition' in step) checkCondition(step.condition, `${at}.condition`, refs);
    if ('add_to_segment' in step) refs.segments.add(step.add_to_segment);
    if ('remove_from_segment' in step) refs.segments.add(step.remove_from_segment);
    if ('webhook' in step) refs.webhooks.add(step.webhook.webhook_id);
    if ('send' in step) refs.templates.push({ at: `${at}.send`, send: step.send });
  });

  // Targets name a step; the edges of the graph.
  const edges: number[][] = steps.map((step, i) =>
    exits(step).map(([field, target]) => {
      if (target !== undefined && target !== END && !ids.has(target)) {
        throw validationError(
          `${where}[${i}].${field} names step "${target}", which does not exist (give a step's id, or "${END}")`,
        );
      }
      return targetIndex(steps, i, target);
    }),
  );

  // No loops: a depth-first walk from the first step; a step met again on the current path is one.
  const state = new Array<0 | 1 | 2>(steps.length).fill(0); // unvisited, on the path, done
  const path: number[] = [];
  const walk = (i: number): void => {
    if (i >= steps.length || state[i] === 2) return;
    if (state[i] === 1) {
      const loop = [...path.slice(path.indexOf(i)), i].map((n) => `steps[${n}]`).join(' → ');
      throw validationError(`${where}: ${loop} is a loop; loops are not allowed (a run visits each step at most once)`);
    }
    state[i] = 1;
    path.push(i);
    for (const j of edges[i]!) walk(j);
    path.pop();
    state[i] = 2;
  };
  walk(0);
  const unreached = state.findIndex((s) => s === 0);
  if (unreached >= 0) {
    const id = steps[unreached]!.id;
    throw validationError(
      `${where}[${unreached}]${id ? ` (id "${id}")` : ''} can never be reached: no path from the first step leads to it`,
    );
  }
  return refs;
}
