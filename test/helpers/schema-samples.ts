// Minimal request values derived from a route's ajv schema: for each place the schema lets a
// string in (a property at any depth, an array item, a map value, an object key), one value that
// holds `text` there and nothing else, with the name the API gives that place in its errors
// (`.tags.0.name`). Tests walk the permission table with them, so a new schema is covered as
// soon as it is registered.

export interface Sample {
  /** Where the text sits, after `body` / `query` (`''`: the value itself). */
  path: string;
  value: unknown;
  /** The text is an object key, not a value. */
  key?: boolean;
}

type Schema = Record<string, unknown>;

const MAX_DEPTH = 6;

function isObject(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typesOf(s: Schema): string[] | null {
  if (typeof s.type === 'string') return [s.type];
  if (Array.isArray(s.type)) return s.type as string[];
  return null;
}

function resolve(s: Schema, root: Schema): Schema {
  const ref = s.$ref;
  if (typeof ref !== 'string') return s;
  const name = ref.replace('#/$defs/', '');
  const target = (root.$defs as Record<string, Schema> | undefined)?.[name];
  if (!target) throw new Error(`schema-samples: unresolved ${ref}`);
  return target;
}

function objectSamples(s: Schema, text: string, root: Schema, depth: number): Sample[] {
  const out: Sample[] = [{ path: '', value: { [`k${text}`]: 1 }, key: true }];
  for (const [name, sub] of Object.entries((s.properties as Record<string, Schema> | undefined) ?? {})) {
    for (const x of samples(sub, text, root, depth + 1)) {
      out.push({ ...x, path: `.${name}${x.path}`, value: { [name]: x.value } });
    }
  }
  const extra = s.additionalProperties;
  // A map (its values' schema) or a free-form object (any value): a string under a plain key.
  const values = isObject(extra) ? samples(extra, text, root, depth + 1) : [];
  if (extra === undefined || extra === true) values.push({ path: '', value: text });
  for (const x of values) out.push({ ...x, path: `.k${x.path}`, value: { k: x.value } });
  return out;
}

/** Every sample of `schema`; `root` holds the `$defs` its references name. */
export function samples(schema: Schema, text: string, root: Schema = schema, depth = 0): Sample[] {
  if (depth > MAX_DEPTH) return [];
  const s = resolve(schema, root);
  const out: Sample[] = [];
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    for (const branch of (s[key] as Schema[] | undefined) ?? []) out.push(...samples(branch, text, root, depth));
  }
  const types = typesOf(s);
  const structured = s.properties || s.additionalProperties !== undefined || s.items;
  if (types === null ? !structured && out.length === 0 && !('const' in s) : types.includes('string')) {
    out.push({ path: '', value: text });
  }
  if (types?.includes('array') || s.items) {
    const items = isObject(s.items) ? samples(s.items, text, root, depth + 1) : [{ path: '', value: text }];
    for (const x of items) out.push({ ...x, path: `.0${x.path}`, value: [x.value] });
  }
  if (types?.includes('object') || s.properties || isObject(s.additionalProperties)) {
    out.push(...objectSamples(s, text, root, depth));
  }
  return out;
}
