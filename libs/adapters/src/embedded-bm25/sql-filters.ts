import type { FilterCondition, Filters, SearchScope } from '@rag/contracts';
import { PUBLIC_ACL } from '@rag/domain';

/**
 * Translates a search scope and metadata filters into one SQL boolean expression over a chunk row with
 * columns `<alias>.tenant`, `<alias>.acl` (JSON array), `<alias>.document_id` and `<alias>.metadata`
 * (JSON object), with exactly the semantics of `matches()` in `@rag/domain` (filters.ts):
 *
 * - tenant must be equal; with principals given, the ACL must contain `*` or one of them;
 * - scalar condition: strict equality for scalar fields (`"5"` never equals `5`, `true` never equals `1`),
 *   membership of `String(value)` for string[] fields;
 * - `{in: [...]}`: any of the scalar conditions;
 * - `{gte, gt, lte, lt}`: numeric fields only;
 * - a missing field never matches; key `document_id` addresses the chunk's document id.
 *
 * Values are always bound as named parameters, never spliced into the SQL. JSON types are checked with
 * `json_type()` because `json_extract()` maps JSON true/false to 1/0.
 */
export interface SqlCondition {
  sql: string;
  params: Record<string, string | number>;
}

class ParamBag {
  readonly params: Record<string, string | number> = {};
  private n = 0;
  add(value: string | number): string {
    const name = `f${this.n++}`;
    this.params[name] = value;
    return `@${name}`;
  }
}

/** JSON path for a top-level key; `null` when the key cannot be expressed as a quoted path label. */
function jsonPath(key: string): string | null {
  if (key.includes('"') || key.includes('\\')) return null;
  return `$."${key}"`;
}

function metaScalar(m: string, path: string, expected: string | number | boolean, p: ParamBag): string {
  const arrayContains = (s: string): string =>
    `EXISTS (SELECT 1 FROM json_each(${m}, ${path}) e WHERE e.type = 'text' AND e.value = ${p.add(s)})`;
  if (typeof expected === 'boolean') {
    const t = expected ? 'true' : 'false';
    return `(CASE json_type(${m}, ${path}) WHEN '${t}' THEN 1 WHEN 'array' THEN ${arrayContains(t)} ELSE 0 END)`;
  }
  if (typeof expected === 'number') {
    const n = p.add(expected);
    return (
      `(CASE json_type(${m}, ${path}) WHEN 'integer' THEN json_extract(${m}, ${path}) = ${n} ` +
      `WHEN 'real' THEN json_extract(${m}, ${path}) = ${n} WHEN 'array' THEN ${arrayContains(String(expected))} ELSE 0 END)`
    );
  }
  return (
    `(CASE json_type(${m}, ${path}) WHEN 'text' THEN json_extract(${m}, ${path}) = ${p.add(expected)} ` +
    `WHEN 'array' THEN ${arrayContains(expected)} ELSE 0 END)`
  );
}

function metaIn(m: string, path: string, values: ReadonlyArray<string | number>, p: ParamBag): string {
  const strs = values.filter((v): v is string => typeof v === 'string');
  const nums = values.filter((v): v is number => typeof v === 'number');
  const all = p.add(JSON.stringify(values.map((v) => String(v))));
  const parts = [`WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each(${m}, ${path}) e WHERE e.type = 'text' AND e.value IN (SELECT value FROM json_each(${all})))`];
  if (strs.length > 0) parts.push(`WHEN 'text' THEN json_extract(${m}, ${path}) IN (SELECT value FROM json_each(${p.add(JSON.stringify(strs))}))`);
  if (nums.length > 0) {
    const ns = p.add(JSON.stringify(nums));
    parts.push(`WHEN 'integer' THEN json_extract(${m}, ${path}) IN (SELECT value FROM json_each(${ns}))`);
    parts.push(`WHEN 'real' THEN json_extract(${m}, ${path}) IN (SELECT value FROM json_each(${ns}))`);
  }
  return `(CASE json_type(${m}, ${path}) ${parts.join(' ')} ELSE 0 END)`;
}

function metaRange(m: string, path: string, r: { gte?: number; gt?: number; lte?: number; lt?: number }, p: ParamBag): string {
  const bounds: string[] = [];
  const v = `json_extract(${m}, ${path})`;
  if (r.gte !== undefined) bounds.push(`${v} >= ${p.add(r.gte)}`);
  if (r.gt !== undefined) bounds.push(`${v} > ${p.add(r.gt)}`);
  if (r.lte !== undefined) bounds.push(`${v} <= ${p.add(r.lte)}`);
  if (r.lt !== undefined) bounds.push(`${v} < ${p.add(r.lt)}`);
  return `(json_type(${m}, ${path}) IN ('integer', 'real')${bounds.map((b) => ` AND ${b}`).join('')})`;
}

function documentIdCondition(col: string, cond: FilterCondition, p: ParamBag): string {
  if (typeof cond === 'string') return `${col} = ${p.add(cond)}`;
  if (typeof cond !== 'object') return '0'; // a number/boolean never equals a string id
  if ('in' in cond) {
    const strs = cond.in.filter((v): v is string => typeof v === 'string');
    return strs.length === 0 ? '0' : `${col} IN (SELECT value FROM json_each(${p.add(JSON.stringify(strs))}))`;
  }
  return '0'; // a range never matches a string
}

function condition(alias: string, key: string, cond: FilterCondition, p: ParamBag): string {
  if (key === 'document_id') return documentIdCondition(`${alias}.document_id`, cond, p);
  const raw = jsonPath(key);
  if (raw === null) return '0';
  const m = `${alias}.metadata`;
  const path = p.add(raw);
  if (typeof cond !== 'object') return metaScalar(m, path, cond, p);
  if ('in' in cond) return metaIn(m, path, cond.in, p);
  return metaRange(m, path, cond, p);
}

/** Scope + filters as one SQL expression over the row alias (e.g. `c`). */
export function scopeAndFiltersSql(alias: string, scope: SearchScope, filters?: Filters): SqlCondition {
  const p = new ParamBag();
  const parts: string[] = [`${alias}.tenant = ${p.add(scope.tenant)}`];
  if (scope.principals !== undefined) {
    // A public chunk's ACL is stored as exactly `["*"]` (JSON.stringify of the contract's array): that string
    // equality decides it without opening json_each over the ACL, the common case; any other spelling still goes
    // through the EXISTS, so the result is the same either way.
    parts.push(
      `(${alias}.acl = ${p.add(JSON.stringify([PUBLIC_ACL]))} OR EXISTS (SELECT 1 FROM json_each(${alias}.acl) a WHERE a.value = ${p.add(PUBLIC_ACL)} ` +
        `OR a.value IN (SELECT value FROM json_each(${p.add(JSON.stringify(scope.principals))}))))`,
    );
  }
  for (const [key, cond] of Object.entries(filters ?? {})) parts.push(condition(alias, key, cond, p));
  return { sql: parts.join(' AND '), params: p.params };
}
