// The validators of the route that matched: a handler asks for "this route's body" and gets the
// validator compiled from the schema its permission-table row names (shared/permissions.ts ->
// api/schemas/registry.ts), the one the OpenAPI document shows. All of them are compiled once,
// when this module loads; a row naming an unknown schema stops the process at start-up.
import { ROUTES, routeId, type RouteRule } from '../shared/permissions.js';
import { BODY_ITEM_SCHEMAS, BODY_SCHEMAS, QUERY_SCHEMAS } from './schemas/registry.js';
import type { ApiContext } from './types.js';
import { bodyValidator, queryValidator, type Validator } from './validate.js';

interface RouteValidators {
  body?: Validator<unknown>;
  items?: Validator<unknown>;
  query?: Validator<unknown>;
}

function lookup(table: Record<string, object>, name: string, what: string, id: string): object {
  const schema = table[name];
  if (!schema) throw new Error(`${id}: ${what} schema "${name}" is not in api/schemas/registry.ts`);
  return schema;
}

function compileAll(): Map<string, RouteValidators> {
  const byName = new Map<string, Validator<unknown>>();
  const once = (key: string, make: () => Validator<unknown>) => {
    if (!byName.has(key)) byName.set(key, make());
    return byName.get(key)!;
  };
  const out = new Map<string, RouteValidators>();
  for (const rule of ROUTES) {
    const id = routeId(rule);
    const v: RouteValidators = {};
    if (rule.body) {
      const name = rule.body;
      const item = BODY_ITEM_SCHEMAS[name];
      v.body = once(`body:${name}`, () => bodyValidator(lookup(BODY_SCHEMAS, name, 'body', id), item !== undefined));
      if (item) v.items = once(`body:${item}`, () => bodyValidator(lookup(BODY_SCHEMAS, item, 'body item', id)));
    }
    if (rule.query) {
      const name = rule.query;
      v.query = once(`query:${name}`, () => queryValidator(lookup(QUERY_SCHEMAS, name, 'query', id)));
    }
    out.set(id, v);
  }
  return out;
}

const VALIDATORS = compileAll();

function validatorsOf(ctx: ApiContext, part: keyof RouteValidators): Validator<unknown> {
  const rule: RouteRule | undefined = ctx.state.rule;
  const fn = rule ? VALIDATORS.get(routeId(rule))?.[part] : undefined;
  if (!fn)
    throw new Error(`${rule ? routeId(rule) : 'this route'} declares no ${part} schema in shared/permissions.ts`);
  return fn;
}

/** The JSON body, validated with the body schema of the matched route (422 on failure). */
export function routeBody<T>(ctx: ApiContext): T {
  return validatorsOf(ctx, 'body')(ctx.state.body) as T;
}

/** One item of an array body whose items the handler validates one at a time. */
export function routeBodyItem<T>(ctx: ApiContext, item: unknown): T {
  return validatorsOf(ctx, 'items')(item) as T;
}

/** The query string, validated (and coerced) with the query schema of the matched route. */
export function routeQuery<T>(ctx: ApiContext): T {
  return validatorsOf(ctx, 'query')(ctx.query) as T;
}
