import { type Metadata, MetadataSchema } from '@rag/contracts';
import { cleanText } from './text';

/** One document of a JSON Lines batch (BEIR corpus format: `{"_id", "title", "text"}`). */
export interface JsonlDoc {
  _id: string;
  title: string;
  text: string;
  metadata?: Metadata;
}

export interface JsonlError {
  /** 1-based line number in the input. */
  line: number;
  error: string;
}

export interface JsonlParseResult {
  docs: JsonlDoc[];
  errors: JsonlError[];
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/**
 * Parses a JSON Lines batch, one `{"_id", "title", "text", "metadata"?}` object per line. Blank lines are
 * skipped; a bad line (malformed JSON, missing or blank `_id`/`text`, invalid metadata, repeated `_id`) is
 * reported with its 1-based line number and the other lines are still parsed. Other keys are ignored.
 */
export function parseJsonl(text: string): JsonlParseResult {
  const docs: JsonlDoc[] = [];
  const errors: JsonlError[] = [];
  const seen = new Map<string, number>();
  const lines = cleanText(text).split('\n');
  lines.forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      errors.push({ line, error: `malformed JSON: ${err instanceof Error ? err.message : String(err)}` });
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      errors.push({ line, error: `expected a JSON object with "_id" and "text", got ${describe(value)}` });
      return;
    }
    const obj = value as Record<string, unknown>;
    const rawId = obj['_id'];
    const id = typeof rawId === 'string' ? rawId.trim() : typeof rawId === 'number' && Number.isFinite(rawId) ? String(rawId) : '';
    if (!id) {
      errors.push({ line, error: rawId === undefined ? 'missing "_id"' : `"_id" must be a non-blank string, got ${describe(rawId)}` });
      return;
    }
    const body = obj['text'];
    if (typeof body !== 'string' || body.trim() === '') {
      errors.push({
        line,
        error: body === undefined ? `missing "text" (document "${id}")` : `"text" must be a non-blank string (document "${id}")`,
      });
      return;
    }
    const rawTitle = obj['title'];
    if (rawTitle !== undefined && rawTitle !== null && typeof rawTitle !== 'string') {
      errors.push({ line, error: `"title" must be a string, got ${describe(rawTitle)} (document "${id}")` });
      return;
    }
    let metadata: Metadata | undefined;
    if (obj['metadata'] !== undefined && obj['metadata'] !== null) {
      const parsed = MetadataSchema.safeParse(obj['metadata']);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue && issue.path.length > 0 ? ` at "${issue.path.join('.')}"` : '';
        errors.push({
          line,
          error: `"metadata" must be an object of string, number, boolean or string[] values${where} (document "${id}")`,
        });
        return;
      }
      metadata = parsed.data;
    }
    const first = seen.get(id);
    if (first !== undefined) {
      errors.push({ line, error: `duplicate "_id" "${id}" (first on line ${first})` });
      return;
    }
    seen.set(id, line);
    const doc: JsonlDoc = { _id: id, title: typeof rawTitle === 'string' ? rawTitle.trim() : '', text: body };
    if (metadata) doc.metadata = metadata;
    docs.push(doc);
  });
  return { docs, errors };
}
