// The body limits of the sending routes hold a request at every maximum of its schema: the
// largest batch (100 items, each at BATCH_ITEM's limits and every shared field's) and the largest
// single send fit, and one character more in a field is refused by the schema, not by the limit.
import { expect } from 'chai';
import { MAX_BATCH, batchItemSchema, sendEmailSchema } from '../../api/schemas/emails.js';
import { bodyValidator } from '../../api/validate.js';
import { ROUTES } from '../../shared/permissions.js';
import { maxBatchItem, maxSendBody } from '../helpers/max-email.js';

const limitOf = (path: string) => ROUTES.find((r) => r.method === 'POST' && r.path === path)!.bodyLimit!;
const options = (tag: string) => ({
  domain: 'acme.test',
  topicId: 'top_01JAAAAAAAAAAAAAAAAAAAAAAA',
  tag,
  scheduledAt: new Date(Date.now() + 86_400_000),
});

describe('body limits of the sending routes', () => {
  it('POST /emails/batch: 100 items at every maximum are valid and fit the body limit', () => {
    const validate = bodyValidator(batchItemSchema);
    const items = Array.from({ length: MAX_BATCH }, (_, i) => maxBatchItem(options(`b${String(i).padStart(3, '0')}`)));
    for (const item of items) validate(item);
    const bytes = Buffer.byteLength(JSON.stringify(items));
    expect(bytes).to.be.above(100 * 1024 * 1024);
    expect(bytes).to.be.at.most(limitOf('/emails/batch'));
  });

  it('POST /emails/batch: one character more than a batch item allows is a validation error', () => {
    const validate = bodyValidator(batchItemSchema);
    const item = maxBatchItem(options('b1'));
    expect(() => validate({ ...item, html: `${item.html}x` })).to.throw(/body\.html must NOT have more than/);
    const [first, ...rest] = item.attachments;
    const bigger = { ...first!, content: `${first!.content}${'A'.repeat(700_000)}` };
    expect(() => validate({ ...item, attachments: [bigger, ...rest] })).to.throw(/body\.attachments\.0\.content/);
    expect(() => validate({ ...item, attachments: [...item.attachments, first] })).to.throw(/body\.attachments/);
  });

  it('POST /emails: a message at every maximum is valid and fits the body limit', () => {
    const body = maxSendBody(options('s1'));
    bodyValidator(sendEmailSchema)(body);
    expect(Buffer.byteLength(JSON.stringify(body))).to.be.at.most(limitOf('/emails'));
  });
});
