// Small builders for the response schemas (JSON Schema 2020-12, as OpenAPI 3.1 takes it). The
// objects are closed (`additionalProperties: false`) and list every field they always carry as
// required, so a test that validates real answers against them fails when a route and its
// documented shape part.

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const str: Schema = { type: 'string' };
export const strOrNull: Schema = { type: ['string', 'null'] };
export const int: Schema = { type: 'integer' };
export const intOrNull: Schema = { type: ['integer', 'null'] };
export const bool: Schema = { type: 'boolean' };
export const time: Schema = { type: 'string', format: 'date-time' };
export const timeOrNull: Schema = { type: ['string', 'null'], format: 'date-time' };
export const strings: Schema = { type: 'array', items: str };
export const constant = (value: string | boolean): Schema => ({ const: value });
export const oneOf = (values: readonly string[]): Schema => ({ type: 'string', enum: [...values] });
export const arrayOf = (items: Schema): Schema => ({ type: 'array', items });

/** A closed object; every property is required unless named in `optional`. */
export function object(properties: Record<string, Schema>, optional: string[] = [], description?: string): Schema {
  return {
    type: 'object',
    ...(description ? { description } : {}),
    additionalProperties: false,
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    properties,
  };
}

/** The list envelope of every list route: `{object: "list", data: [...], has_more}`. */
export function listOf(item: string): Schema {
  return object(
    { object: constant('list'), data: arrayOf(ref(item)), has_more: bool },
    [],
    `A page of ${item} objects, newest first. \`has_more\`: pass the last id as \`after\` for the next page.`,
  );
}

/** `{object, id, deleted: true}` and the extra fields a delete answers with. */
export function deleted(objectName: string, extra: Record<string, Schema> = {}): Schema {
  return object({ object: constant(objectName), id: str, ...extra, deleted: constant(true) });
}
