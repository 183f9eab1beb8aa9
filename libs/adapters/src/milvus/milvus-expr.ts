import type { FilterCondition, Filters, SearchScope } from '@rag/contracts';
import { PUBLIC_ACL } from '@rag/domain';

/**
 * Translates a search scope and metadata filters into one Milvus 2.3 boolean expression over the collection
 * fields `tenant` (VarChar), `document_id` (VarChar), `acl` (Array<VarChar>) and `metadata` (JSON object),
 * with exactly the semantics of `matches()` in `@rag/domain` (filters.ts):
 *
 * - tenant must be equal; with principals given, the ACL must contain `*` or one of them
 *   (`array_contains_any(acl, ["*", ...principals])`);
 * - scalar condition: strict equality for scalar fields (Milvus compares JSON values type-strictly: the string
 *   `"5"` never equals `5`, `true` never equals `1`), membership of `String(value)` for string[] fields
 *   (`json_contains`);
 * - `{in: [...]}`: any of the scalar conditions (strings, integers and other numbers are tested in separate `in`
 *   lists, since Milvus requires each list to be of one literal type, plus `json_contains_any` over the stringified
 *   values for string[] fields);
 * - `{gte, gt, lte, lt}`: numeric fields only (a JSON comparison with a number literal is false for strings, booleans
 *   and arrays);
 * - a missing field never matches; the key `document_id` addresses the chunk's document id.
 *
 * The expression goes into the search request itself, so filtering happens inside the ANN search (Milvus applies it
 * as a bitset before the graph traversal) and a restrictive filter still returns k matching hits.
 *
 * Returns `null` when the filters can never match (e.g. a number or a range on `document_id`): callers answer with no
 * hits instead of sending an unsatisfiable expression.
 *
 * String literals are double-quoted with Go/C escapes (`\\`, `\"`, `\n`, `\r`, `\t`, `\uXXXX` for other control
 * characters), which is what the Milvus 2.3 expression grammar accepts and `strconv.Unquote` decodes.
 */

/** Escapes the inside of a double-quoted Milvus string literal. */
export function escapeMilvusString(s: string): string {
  let out = '';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === '"') out += '\\"';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f || code === 0x2028 || code === 0x2029) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return out;
}

/** A double-quoted, escaped Milvus string literal. */
export function milvusString(s: string): string {
  return `"${escapeMilvusString(s)}"`;
}

/**
 * A Milvus number literal. Safe integers are written as integers (compared as int64); anything else as a float
 * literal (`0.5`, `1e+21`), never in a form the grammar would misread as an out-of-range integer.
 */
export function milvusNumber(n: number): string {
  if (!Number.isFinite(n)) throw new Error(`milvus expression: non-finite number ${n}`);
  if (Number.isSafeInteger(n)) return Object.is(n, -0) ? '0' : String(n);
  const s = String(n);
  // String() of a non-safe-integer is either a float with '.'/'e' or a long digit string (e.g. 1e20 → "100000000000000000000").
  return /[.e]/.test(s) ? s : n.toExponential();
}

export function milvusStringList(values: readonly string[]): string {
  return `[${values.map(milvusString).join(', ')}]`;
}

function metadataPath(key: string): string {
  return `metadata[${milvusString(key)}]`;
}

function scalarLiteral(v: string | number | boolean): string {
  if (typeof v === 'string') return milvusString(v);
  if (typeof v === 'number') return milvusNumber(v);
  return v ? 'true' : 'false';
}

function metadataCondition(key: string, cond: FilterCondition): string {
  const field = metadataPath(key);
  if (typeof cond !== 'object') {
    // Scalar field equal to the value, or a string[] field containing String(value).
    return `(${field} == ${scalarLiteral(cond)} || json_contains(${field}, ${milvusString(String(cond))}))`;
  }
  if ('in' in cond) {
    const strs = cond.in.filter((v): v is string => typeof v === 'string');
    const nums = cond.in.filter((v): v is number => typeof v === 'number');
    const parts: string[] = [];
    if (strs.length > 0) parts.push(`${field} in ${milvusStringList(strs)}`);
    // Milvus 2.3 asserts that every literal of an `in` list has the list's type: integers and floats go in separate lists.
    const ints = nums.filter((n) => Number.isSafeInteger(n));
    const floats = nums.filter((n) => !Number.isSafeInteger(n));
    if (ints.length > 0) parts.push(`${field} in [${ints.map(milvusNumber).join(', ')}]`);
    if (floats.length > 0) parts.push(`${field} in [${floats.map(milvusNumber).join(', ')}]`);
    parts.push(`json_contains_any(${field}, ${milvusStringList(cond.in.map((v) => String(v)))})`);
    return `(${parts.join(' || ')})`;
  }
  const bounds: string[] = [];
  if (cond.gte !== undefined) bounds.push(`${field} >= ${milvusNumber(cond.gte)}`);
  if (cond.gt !== undefined) bounds.push(`${field} > ${milvusNumber(cond.gt)}`);
  if (cond.lte !== undefined) bounds.push(`${field} <= ${milvusNumber(cond.lte)}`);
  if (cond.lt !== undefined) bounds.push(`${field} < ${milvusNumber(cond.lt)}`);
  if (bounds.length === 0) throw new Error(`milvus expression: empty range for "${key}"`);
  return `(${bounds.join(' && ')})`;
}

/** `document_id` is a VarChar column: only strings can match; `null` = can never match. */
function documentIdCondition(cond: FilterCondition): string | null {
  if (typeof cond === 'string') return `document_id == ${milvusString(cond)}`;
  if (typeof cond !== 'object') return null;
  if ('in' in cond) {
    const strs = cond.in.filter((v): v is string => typeof v === 'string');
    return strs.length === 0 ? null : `document_id in ${milvusStringList(strs)}`;
  }
  return null;
}

/** Tenant + ACL scope as a Milvus expression. */
export function milvusScopeExpr(scope: SearchScope): string {
  const parts = [`tenant == ${milvusString(scope.tenant)}`];
  if (scope.principals !== undefined) {
    const allowed = [PUBLIC_ACL, ...scope.principals.filter((p) => p !== PUBLIC_ACL)];
    parts.push(`array_contains_any(acl, ${milvusStringList(allowed)})`);
  }
  return parts.join(' && ');
}

/** Scope + filters as one Milvus expression; `null` when the filters can never match. */
export function buildMilvusExpr(scope: SearchScope, filters?: Filters): string | null {
  const parts = [milvusScopeExpr(scope)];
  for (const [key, cond] of Object.entries(filters ?? {})) {
    if (key === 'document_id') {
      const c = documentIdCondition(cond);
      if (c === null) return null;
      parts.push(c);
    } else {
      parts.push(metadataCondition(key, cond));
    }
  }
  return parts.join(' && ');
}

/** Expression selecting a document's rows, except those of `keepVersion` when given. */
export function milvusDocumentExpr(documentId: string, keepVersion?: number): string {
  const doc = `document_id == ${milvusString(documentId)}`;
  return keepVersion === undefined ? doc : `${doc} && version != ${milvusNumber(keepVersion)}`;
}

/**
 * The rows of several documents' deletes in one expression (each as {@link milvusDocumentExpr}, joined by `||`); ids
 * only (`document_id in [...]`) when no delete keeps a version.
 */
export function milvusDocumentsExpr(documents: readonly { documentId: string; keepVersion?: number }[]): string {
  if (documents.length === 0) throw new Error('milvusDocumentsExpr: no documents');
  if (documents.every((d) => d.keepVersion === undefined)) return `document_id in ${milvusStringList([...new Set(documents.map((d) => d.documentId))])}`;
  return documents.map((d) => `(${milvusDocumentExpr(d.documentId, d.keepVersion)})`).join(' || ');
}
