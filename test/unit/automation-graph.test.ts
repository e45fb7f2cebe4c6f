// The automation step graph (shared/automation-steps.ts): where each path leads, and the graphs
// checkGraph refuses (loops through any kind of exit, unreachable steps, dangling targets).
import { expect } from 'chai';
import { checkGraph, targetIndex, type AutomationStep } from '../../shared/automation-steps.js';
import { ApiError } from '../../shared/errors.js';

const wait = (extra: Record<string, string> = {}) => ({ wait: '1h', ...extra }) as AutomationStep;

function refusal(steps: unknown[]): string {
  try {
    checkGraph(steps as AutomationStep[]);
  } catch (err) {
    expect(err).to.be.instanceOf(ApiError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(steps)}`);
}

describe('automation step graph', () => {
  it('leads a target to its step, "end" and the last step’s fall-through past the end', () => {
    const steps = [wait({ id: 'a' }), wait(), wait({ id: 'c' })];
    expect(targetIndex(steps, 0, undefined)).to.equal(1);
    expect(targetIndex(steps, 0, 'c')).to.equal(2);
    expect(targetIndex(steps, 1, 'end')).to.equal(3);
    expect(targetIndex(steps, 2, undefined)).to.equal(3);
  });

  it('accepts a diamond (two paths that join) and returns what the steps refer to', () => {
    const refs = checkGraph([
      { condition: { in_segment: 'seg_a' }, then: 'x', else: 'y' },
      { id: 'x', add_to_segment: 'seg_b', next: 'join' },
      { id: 'y', webhook: { webhook_id: 'wh_1' } },
      { id: 'join', send: { template: 't', from: 'a@b.test' } },
    ] as AutomationStep[]);
    expect([...refs.segments].sort()).to.deep.equal(['seg_a', 'seg_b']);
    expect([...refs.webhooks]).to.deep.equal(['wh_1']);
    expect(refs.templates.map((t) => t.at)).to.deep.equal(['body.steps[3].send']);
  });

  it('refuses a loop through else, through on_timeout, and by falling through into a jump back', () => {
    expect(
      refusal([
        { id: 'top', condition: { field: 'email', op: 'exists', value: true }, then: 'end', else: 'back' },
        { id: 'back', wait: '1h', next: 'top' },
      ]),
    ).to.contain('steps[0] → steps[1] → steps[0] is a loop');
    expect(
      refusal([
        { id: 'w', wait_for_event: { event: 'e', timeout: '1d' }, next: 'end', on_timeout: 'again' },
        { id: 'again', update_contact: { properties: { n: 1 } }, next: 'w' },
      ]),
    ).to.contain('is a loop');
    expect(
      refusal([wait(), wait(), wait({ next: 'first' }), wait()].map((s, i) => (i === 1 ? { ...s, id: 'first' } : s))),
    ).to.contain('steps[1] → steps[2] → steps[1] is a loop');
  });

  it('refuses unreachable steps, dangling targets and misplaced exits', () => {
    expect(refusal([wait({ next: 'end' }), wait()])).to.contain('body.steps[1] can never be reached');
    expect(refusal([{ condition: { in_segment: 's' }, then: 'nope' }])).to.contain(
      'body.steps[0].then names step "nope", which does not exist',
    );
    expect(refusal([{ add_to_segment: 's', on_timeout: 'end' }])).to.contain(
      'only a wait_for_event step takes on_timeout',
    );
    expect(refusal([{ remove_from_segment: 's', webhook: { webhook_id: 'w' } }])).to.contain('several step types');
  });
});
