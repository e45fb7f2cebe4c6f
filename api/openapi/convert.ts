// ajv request schemas as OpenAPI 3.1 (JSON Schema 2020-12) schemas. The conversion is mechanical
// and keeps every constraint: ajv's `nullable: true` becomes a `null` member of `type` (and of
// `enum`), and a schema's own `$defs` move to `components.schemas` (a `#/$defs/x` reference inside
// the document would point at its root), their references following them.

export type Schema = Record<string, unknown>;

const SUBSCHEMA = ['items', 'not', 'if', 'then', 'else', 'propertyNames', 'contains', 'additionalProperties'];
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties'];

function isObject(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function nullable(s: Schema): Schema {
  const { nullable: on, ...rest } = s;
  if (on !== true) return rest;
  const type = rest.type;
  if (typeof type === 'string') rest.type = [type, 'null'];
  else if (Array.isArray(type) && !type.includes('null')) rest.type = [...(type as string[]), 'null'];
  if (Array.isArray(rest.enum) && !rest.enum.includes(null)) rest.enum = [...(rest.enum as unknown[]), null];
  return rest;
}

function walk(s: unknown, refs: Map<string, string>): unknown {
  if (!isObject(s)) return s;
  const out = nullable(s);
  delete out.$defs;
  if (typeof out.$ref === 'string' && out.$ref.startsWith('#/$defs/')) {
    const target = refs.get(out.$ref.slice('#/$defs/'.length));
    if (!target) throw new Error(`unresolved ${out.$ref}`);
    out.$ref = `#/components/schemas/${target}`;
  }
  for (const k of SUBSCHEMA) if (isObject(out[k])) out[k] = walk(out[k], refs);
  for (const k of SUBSCHEMA_LISTS) if (Array.isArray(out[k])) out[k] = (out[k] as unknown[]).map((x) => walk(x, refs));
  for (const k of SUBSCHEMA_MAPS) {
    if (isObject(out[k])) {
      out[k] = Object.fromEntries(Object.entries(out[k]).map(([name, sub]) => [name, walk(sub, refs)]));
    }
  }
  return out;
}

/**
 * Converts `schema`; each of its `$defs` becomes a component of `components` named after its key
 * (`filter3` → `Filter3`); two schemas may share a definition only if it is the same.
 */
export function toOpenApiSchema(schema: object, components: Record<string, Schema>): Schema {
  const defs = (schema as { $defs?: Record<string, object> }).$defs ?? {};
  const names = new Map<string, string>();
  for (const key of Object.keys(defs)) names.set(key, key.charAt(0).toUpperCase() + key.slice(1));
  for (const [key, def] of Object.entries(defs)) {
    const name = names.get(key)!;
    const converted = walk(def, names) as Schema;
    const existing = components[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(converted)) {
      throw new Error(`two different schemas define $defs/${key}`);
    }
    components[name] = converted;
  }
  return walk(schema, names) as Schema;
}
