import { expect } from 'chai';
import type { TemplateVariable } from '../../shared/db/templates.js';
import { ApiError } from '../../shared/errors.js';
import { checkTemplateSource, checkVariables, renderTemplate } from '../../shared/templates.js';

function content(
  parts: { subject?: string | null; html?: string | null; text?: string | null },
  variables: TemplateVariable[],
) {
  return { subject: parts.subject ?? null, html: parts.html ?? null, text: parts.text ?? null, variables };
}

function expect422(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ApiError);
    expect((err as ApiError).code).to.equal('validation_error');
    expect((err as ApiError).message).to.match(pattern);
    return;
  }
  expect.fail(`expected a validation_error matching ${pattern}`);
}

const NAME: TemplateVariable = { key: 'name', type: 'string' };

describe('template rendering', () => {
  it('HTML-escapes {{var}} in html, keeps {{{var}}} and {{& var}} raw', () => {
    const out = renderTemplate(content({ html: '<p>{{name}}|{{{name}}}|{{& name}}</p>' }, [NAME]), {
      name: `<b>"Tom" & 'Jerry'</b>`,
    });
    expect(out.html).to.equal(
      '<p>&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;&#x2F;b&gt;|<b>"Tom" & \'Jerry\'</b>|<b>"Tom" & \'Jerry\'</b></p>',
    );
  });

  it('never HTML-escapes subject and text', () => {
    const out = renderTemplate(content({ subject: 'Hi {{name}}', text: 'Dear {{name}},' }, [NAME]), {
      name: 'A & B <c>',
    });
    expect(out.subject).to.equal('Hi A & B <c>');
    expect(out.text).to.equal('Dear A & B <c>,');
    expect(out.html).to.equal(null);
  });

  it('keeps line breaks of a value out of the subject', () => {
    const out = renderTemplate(content({ subject: 'Hi {{name}}' }, [NAME]), { name: 'x\r\nBcc: evil@example.test' });
    expect(out.subject).to.equal('Hi x Bcc: evil@example.test');
  });

  it('renders numbers, fallbacks and sections', () => {
    const vars: TemplateVariable[] = [
      NAME,
      { key: 'count', type: 'number', fallback_value: 0 },
      { key: 'coupon', type: 'string', fallback_value: '' },
    ];
    const src = content(
      { text: '{{name}} has {{count}} items.{{#coupon}} Code: {{coupon}}{{/coupon}}{{^coupon}} No code.{{/coupon}}' },
      vars,
    );
    expect(renderTemplate(src, { name: 'Ann', count: 3.5, coupon: 'X1' }).text).to.equal('Ann has 3.5 items. Code: X1');
    expect(renderTemplate(src, { name: 'Ann' }).text).to.equal('Ann has 0 items. No code.');
    // null means "no value": the fallback applies.
    expect(renderTemplate(src, { name: 'Ann', count: null }).text).to.equal('Ann has 0 items. No code.');
  });

  it('refuses a missing required variable and values of the wrong type', () => {
    const vars: TemplateVariable[] = [NAME, { key: 'n', type: 'number' }];
    const src = content({ text: '{{name}} {{n}}' }, vars);
    expect422(() => renderTemplate(src, { n: 1 }), /^body\.template\.variables\.name is required$/);
    expect422(() => renderTemplate(src, { name: null, n: 1 }), /variables\.name is required/);
    expect422(() => renderTemplate(src, { name: 'a', n: '1' }), /variables\.n must be a number/);
    expect422(() => renderTemplate(src, { name: 5, n: 1 }), /variables\.name must be a string/);
    expect422(() => renderTemplate(src, { name: true, n: 1 }), /variables\.name must be a string/);
  });

  it('cannot reach prototype properties, even with undeclared values passed in', () => {
    // Stored versions are checked at publish time; render itself must still stay inside the view.
    const src = content({ text: '[{{constructor}}][{{toString}}][{{__proto__}}][{{name.constructor}}]' }, [NAME]);
    const out = renderTemplate(src, { name: 'x', constructor: 'evil' } as never);
    expect(out.text).to.equal('[][][][]');
  });

  it('does not render partials', () => {
    const src = content({ text: 'a{{> other}}b' }, []);
    expect(renderTemplate(src, {}).text).to.equal('ab');
  });
});

describe('template checks', () => {
  it('accepts a template whose tags are all declared', () => {
    checkTemplateSource(
      content({ subject: 'Hi {{name}}', html: '{{#name}}<b>{{{name}}}</b>{{/name}}', text: '{{^name}}x{{/name}}' }, [
        NAME,
      ]),
    );
  });

  it('names an undeclared variable and where it is used', () => {
    expect422(
      () => checkTemplateSource(content({ html: '<p>{{name}} {{first_name}}</p>' }, [NAME])),
      /^body\.html uses the variable "first_name", which is not declared/,
    );
    expect422(
      () => checkTemplateSource(content({ text: '{{#name}}{{inner}}{{/name}}' }, [NAME])),
      /body\.text uses the variable "inner"/,
    );
    expect422(() => checkTemplateSource(content({ subject: '{{constructor}}' }, [])), /"constructor"/);
    expect422(() => checkTemplateSource(content({ subject: '{{name.length}}' }, [NAME])), /"name\.length"/);
  });

  it('refuses templates that do not parse and partials', () => {
    expect422(
      () => checkTemplateSource(content({ html: '{{#name}}open' }, [NAME])),
      /^body\.html is not a valid template/,
    );
    expect422(() => checkTemplateSource(content({ text: 'x {{name' }, [NAME])), /^body\.text is not a valid template/);
    expect422(() => checkTemplateSource(content({ html: '{{> footer}}' }, [])), /partials are not supported/);
  });

  it('refuses bad variable declarations', () => {
    expect422(() => checkVariables([NAME, NAME]), /body\.variables\.1\.key "name" is declared twice/);
    expect422(() => checkVariables([{ key: 'hasOwnProperty', type: 'string' }]), /not an allowed variable name/);
    expect422(() => checkVariables([{ key: '__proto__', type: 'string' }]), /not an allowed variable name/);
    expect422(() => checkVariables([{ key: 'a.b', type: 'string' }]), /not an allowed variable name/);
    expect422(
      () => checkVariables([{ key: 'n', type: 'number', fallback_value: '3' }]),
      /variables\.0\.fallback_value must be a number/,
    );
  });
});
