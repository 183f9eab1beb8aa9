import type { ChunkDocument } from '../documents';
import { KEYWORD_IGNORE_ABOVE, METADATA_OBJECTS } from '../mapping';
import type { FieldValue, Query } from '../query';

/**
 * Test support: evaluates the query DSL subset the core emits against an indexed document, with the engine's
 * semantics for our mapping (keyword fields compare the string form of the query value, `double` fields compare
 * numerically, `boolean` fields accept true/false/"true"/"false"; keyword values longer than `ignore_above` are not
 * indexed; the `whitespace`-analysed `text_seg` matches on shared tokens). It decides match/no-match only (no
 * scoring), which is what filter semantics need. Used by the contract tests of the shared core.
 */
type FieldType = 'keyword' | 'double' | 'long' | 'boolean' | 'text_ws' | 'text_std';

function fieldType(field: string): FieldType {
  if (field.startsWith(`${METADATA_OBJECTS.string}.`) || field.startsWith(`${METADATA_OBJECTS.array}.`)) return 'keyword';
  if (field.startsWith(`${METADATA_OBJECTS.number}.`)) return 'double';
  if (field.startsWith(`${METADATA_OBJECTS.boolean}.`)) return 'boolean';
  switch (field) {
    case 'version':
      return 'long';
    case 'text_seg':
      return 'text_ws';
    case 'text':
      return 'text_std';
    default:
      return 'keyword';
  }
}

function fieldValues(doc: ChunkDocument, field: string): unknown[] {
  const dot = field.indexOf('.');
  let v: unknown;
  if (dot > 0) {
    const obj = (doc as unknown as Record<string, unknown>)[field.slice(0, dot)];
    v = typeof obj === 'object' && obj !== null ? (obj as Record<string, unknown>)[field.slice(dot + 1)] : undefined;
  } else {
    v = (doc as unknown as Record<string, unknown>)[field];
  }
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}

function coerce(type: FieldType, v: FieldValue): string | number | boolean | null {
  switch (type) {
    case 'keyword':
      return String(v);
    case 'double':
    case 'long': {
      const n = typeof v === 'number' ? v : Number(v);
      if (!Number.isFinite(n)) throw new Error(`engine would reject non-numeric term ${String(v)} on a numeric field`);
      return type === 'long' && !Number.isInteger(n) ? null : n;
    }
    case 'boolean':
      if (v === true || v === 'true') return true;
      if (v === false || v === 'false') return false;
      throw new Error(`engine would reject ${String(v)} on a boolean field`);
    default:
      return String(v);
  }
}

function indexed(type: FieldType, stored: unknown): string | number | boolean | null {
  if (type === 'keyword') {
    const s = String(stored);
    return s.length > KEYWORD_IGNORE_ABOVE ? null : s;
  }
  if (type === 'double' || type === 'long') return typeof stored === 'number' ? stored : null;
  if (type === 'boolean') return typeof stored === 'boolean' ? stored : null;
  return String(stored);
}

function termMatches(doc: ChunkDocument, field: string, value: FieldValue): boolean {
  const type = fieldType(field);
  if (type === 'text_ws' || type === 'text_std') throw new Error('term on a text field is not used by the core');
  const q = coerce(type, value);
  if (q === null) return false;
  return fieldValues(doc, field).some((s) => indexed(type, s) === q);
}

export function evaluate(q: Query, doc: ChunkDocument): boolean {
  if ('term' in q) return Object.entries(q.term).every(([f, { value }]) => termMatches(doc, f, value));
  if ('terms' in q) return Object.entries(q.terms).every(([f, values]) => values.some((v) => termMatches(doc, f, v)));
  if ('range' in q) {
    return Object.entries(q.range).every(([f, r]) => {
      if (fieldType(f) !== 'double' && fieldType(f) !== 'long') throw new Error(`range on non-numeric field ${f}`);
      return fieldValues(doc, f).some((s) => {
        if (typeof s !== 'number') return false;
        return (r.gte === undefined || s >= r.gte) && (r.gt === undefined || s > r.gt) && (r.lte === undefined || s <= r.lte) && (r.lt === undefined || s < r.lt);
      });
    });
  }
  if ('match' in q) {
    return Object.entries(q.match).every(([f, m]) => {
      const tokens = (s: string) => (fieldType(f) === 'text_ws' ? s.split(/\s+/) : s.toLowerCase().split(/[^\p{L}\p{N}]+/u)).filter((t) => t.length > 0);
      const docTokens = new Set(fieldValues(doc, f).flatMap((s) => tokens(String(s))));
      const qTokens = tokens(m.query);
      return m.operator === 'and' ? qTokens.every((t) => docTokens.has(t)) : qTokens.some((t) => docTokens.has(t));
    });
  }
  if ('match_all' in q) return true;
  if ('match_none' in q) return false;
  const b = q.bool;
  if (b.filter && !b.filter.every((c) => evaluate(c, doc))) return false;
  if (b.must && !b.must.every((c) => evaluate(c, doc))) return false;
  if (b.must_not && b.must_not.some((c) => evaluate(c, doc))) return false;
  if (b.should && b.should.length > 0) {
    const min = b.minimum_should_match ?? (b.filter || b.must ? 0 : 1);
    if (b.should.filter((c) => evaluate(c, doc)).length < min) return false;
  }
  return true;
}
