// Template checking and rendering (DESIGN §5 Templates). The engine is mustache.js, logic-less:
// `{{var}}` is HTML-escaped in html, `{{{var}}}` / `{{& var}}` is raw, subject and text are
// never HTML-escaped, `{{#var}}…{{/var}}` / `{{^var}}…{{/var}}` show a block when the value is
// truthy / falsy. Partials are refused and every tag must name a declared variable, so a
// template can never reach anything but the caller's own values: the view is a null-prototype
// object holding only declared keys, so no tag can read `constructor`, `__proto__` and the like.
import Mustache from 'mustache';
import { findTemplateVersion, type TemplateContent, type TemplateVariable } from './db/templates.js';
import type { Db } from './db/pool.js';
import { validationError } from './errors.js';

export type VariableValue = string | number | boolean | null;

export interface TemplateRef {
  /** Template id or slug. */
  id: string;
  version?: number;
  variables?: Record<string, VariableValue>;
}

export interface ResolvedTemplate {
  subject: string | null;
  html: string | null;
  text: string | null;
  from: string | null;
  template: { id: string; slug: string; version: number };
}

export interface RenderedParts {
  subject: string | null;
  html: string | null;
  text: string | null;
}

const TAGS: [string, string] = ['{{', '}}'];
const PARTS = ['subject', 'html', 'text'] as const;
export const VARIABLE_KEY_PATTERN = '^[A-Za-z][A-Za-z0-9_]{0,49}$';
// Names on Object.prototype would shadow mustache's own look-up helpers (it keeps a per-render
// cache object and calls cache.hasOwnProperty), so they cannot be variable names.
const RESERVED_KEYS = new Set(Object.getOwnPropertyNames(Object.prototype));

/** A bounded cache of parsed templates: mustache's default one grows without limit. */
class ParsedCache {
  private readonly map = new Map<string, string>();
  constructor(
    private readonly maxEntries: number,
    private readonly maxKeyLength: number,
  ) {}
  get(key: string): string | undefined {
    const hit = this.map.get(key);
    if (hit !== undefined) {
      this.map.delete(key);
      this.map.set(key, hit);
    }
    return hit;
  }
  set(key: string, value: string): void {
    if (key.length > this.maxKeyLength) return;
    if (this.map.size >= this.maxEntries) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
    this.map.set(key, value);
  }
  clear(): void {
    this.map.clear();
  }
}

const writer = new Mustache.Writer();
(writer as unknown as { templateCache: ParsedCache }).templateCache = new ParsedCache(500, 256 * 1024);

type Token = [string, string, number, number, ...unknown[]];

function parse(source: string, where: string): Token[] {
  try {
    return writer.parse(source, TAGS) as Token[];
  } catch (err) {
    throw validationError(`${where} is not a valid template: ${(err as Error).message}`);
  }
}

/** Every variable name a template's tags use, and whether it uses a partial. */
function tagNames(tokens: Token[], names = new Set<string>()): Set<string> {
  for (const t of tokens) {
    const [type, name] = t;
    if (type === '>') throw new Error(`partials are not supported ({{> ${name}}})`);
    if (type === 'name' || type === '&' || type === '#' || type === '^') names.add(name);
    if ((type === '#' || type === '^') && Array.isArray(t[4])) tagNames(t[4] as Token[], names);
  }
  return names;
}

/** Checks the declared variables: unique keys, allowed names, fallbacks of the declared type. */
export function checkVariables(variables: TemplateVariable[], where = 'body.variables'): void {
  const seen = new Set<string>();
  variables.forEach((v, i) => {
    if (!new RegExp(VARIABLE_KEY_PATTERN).test(v.key) || RESERVED_KEYS.has(v.key)) {
      throw validationError(`${where}.${i}.key "${v.key}" is not an allowed variable name`);
    }
    if (seen.has(v.key)) throw validationError(`${where}.${i}.key "${v.key}" is declared twice`);
    seen.add(v.key);
    const fb = v.fallback_value;
    if (fb !== undefined && fb !== null && typeof fb !== v.type) {
      throw validationError(`${where}.${i}.fallback_value must be a ${v.type}`);
    }
  });
}

/**
 * Checks that subject, html and text parse, use no partials and name only declared variables
 * (like Resend, a template must declare every variable it uses).
 */
export function checkTemplateSource(
  content: Pick<TemplateContent, 'subject' | 'html' | 'text' | 'variables'>,
  where = 'body',
): void {
  checkVariables(content.variables, `${where}.variables`);
  const declared = new Set(content.variables.map((v) => v.key));
  for (const part of PARTS) {
    const source = content[part];
    if (source === null || source === undefined) continue;
    let names: Set<string>;
    try {
      names = tagNames(parse(source, `${where}.${part}`));
    } catch (err) {
      if ((err as { code?: string }).code === 'validation_error') throw err;
      throw validationError(`${where}.${part}: ${(err as Error).message}`);
    }
    for (const name of names) {
      if (!declared.has(name)) {
        throw validationError(`${where}.${part} uses the variable "${name}", which is not declared in variables`);
      }
    }
  }
}

/** Builds the render view: declared keys only, values checked against their declared type. */
function buildView(
  variables: TemplateVariable[],
  values: Record<string, VariableValue>,
  where: string,
): Record<string, string | number> {
  const view = Object.create(null) as Record<string, string | number>;
  for (const v of variables) {
    const given = Object.hasOwn(values, v.key) ? values[v.key] : undefined;
    if (given === undefined || given === null) {
      const fb = v.fallback_value;
      if (fb === undefined || fb === null) throw validationError(`${where}.${v.key} is required`);
      view[v.key] = fb;
      continue;
    }
    const ok = v.type === 'number' ? typeof given === 'number' && Number.isFinite(given) : typeof given === 'string';
    if (!ok) throw validationError(`${where}.${v.key} must be a ${v.type}`);
    view[v.key] = given as string | number;
  }
  return view;
}

const plain = (value: unknown): string => String(value);

/** Renders subject, html and text of one template version with the caller's values. */
export function renderTemplate(
  content: Pick<TemplateContent, 'subject' | 'html' | 'text' | 'variables'>,
  values: Record<string, VariableValue>,
  where = 'body.template.variables',
): RenderedParts {
  const view = buildView(content.variables, values, where);
  const render = (source: string | null, escape: boolean): string | null => {
    if (source === null) return null;
    return writer.render(source, view, undefined, escape ? { tags: TAGS } : { tags: TAGS, escape: plain });
  };
  const subject = render(content.subject, false);
  return {
    // A value with a line break must not split the Subject header.
    subject: subject === null ? null : subject.replace(/[\r\n]+/g, ' '),
    html: render(content.html, true),
    text: render(content.text, false),
  };
}

/**
 * Loads a published version of a template (the given `version`, else the latest) and renders it.
 * Every failure is a 422 validation_error naming the field of the send body (`template.id`,
 * `template.version`, `template.variables.<key>`): the send names something that cannot be used.
 */
export async function resolveTemplate(db: Db, orgId: string, ref: TemplateRef): Promise<ResolvedTemplate> {
  const row = await findTemplateVersion(db, orgId, ref.id, ref.version ?? null);
  if (!row) throw validationError(`body.template.id: template ${ref.id} not found`);
  if (row.version === null) {
    if (row.published_version === null) {
      throw validationError(`body.template.id: template ${ref.id} has no published version`);
    }
    throw validationError(`body.template.version: template ${ref.id} has no version ${ref.version}`);
  }
  let parts: RenderedParts;
  try {
    parts = renderTemplate(row, ref.variables ?? {});
  } catch (err) {
    if ((err as { code?: string }).code === 'validation_error') throw err;
    // Versions are checked when published, so this is a version stored before a rule existed.
    throw validationError(`body.template.id: template ${ref.id} cannot be rendered: ${(err as Error).message}`);
  }
  return {
    ...parts,
    from: row.from_address,
    template: { id: row.template_id, slug: row.slug, version: row.version },
  };
}

/** A slug from a template name: lower case, `[a-z0-9-]`, accents dropped, ≤ 64 characters. */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 56)
    .replace(/-+$/, '');
  return slug || 'template';
}
