/**
 * The agent's next action (issue 16 item 3): which retrieval tool to call with which arguments, or `answer` when the
 * passages found so far suffice. The LLM is asked for one JSON object matching AGENT_ACTION_SCHEMA (constrained by a
 * grammar where the adapter can, RAG_LLM=local; parsed from free text otherwise), and whatever it wrote goes through
 * parseAgentAction: repaired when it is almost JSON, validated, normalised; an error value (never a throw) when not.
 */

export const AGENT_TOOLS = ['dense_search', 'keyword_search', 'filtered_search', 'fetch_document'] as const;
export type AgentTool = (typeof AGENT_TOOLS)[number];

export type AgentAction =
  | { action: 'dense_search' | 'keyword_search'; query: string }
  /** Hybrid search restricted to documents whose metadata `field` equals `value` (on top of the caller's filters). */
  | { action: 'filtered_search'; query: string; field: string; value: string }
  /** More of the document (and parent sections) behind passage [ref] of the evidence so far. */
  | { action: 'fetch_document'; ref: number }
  | { action: 'answer' };

export type AgentActionName = AgentAction['action'];

/** Longest search query the agent may send (characters); longer ones are cut at a word boundary. */
export const AGENT_MAX_QUERY_CHARS = 300;

/** What the grammar lets a constrained model write for a query: shorter than what a parsed reply may hold. */
export const AGENT_SCHEMA_QUERY_CHARS = 160;
const query = { type: 'string', minLength: 1, maxLength: AGENT_SCHEMA_QUERY_CHARS } as const;

/**
 * JSON Schema of one action. Every key of each variant is required (a GBNF grammar cannot leave keys out), string
 * lengths are bounded so that a constrained base model cannot write forever.
 */
export const AGENT_ACTION_SCHEMA = {
  oneOf: [
    { type: 'object', properties: { action: { const: 'dense_search' }, query } },
    { type: 'object', properties: { action: { const: 'keyword_search' }, query } },
    {
      type: 'object',
      properties: { action: { const: 'filtered_search' }, query, field: { type: 'string', minLength: 1, maxLength: 64 }, value: { type: 'string', minLength: 1, maxLength: 128 } },
    },
    { type: 'object', properties: { action: { const: 'fetch_document' }, ref: { type: 'integer' } } },
    { type: 'object', properties: { action: { const: 'answer' } } },
  ],
} as const;

/**
 * The schema for a planning call with `passages` passages found so far: without any, fetch_document (which must
 * name one) is left out, so a constrained model cannot pick an action that cannot run.
 */
export function agentActionSchema(passages: number): { oneOf: readonly object[] } {
  return passages > 0 ? AGENT_ACTION_SCHEMA : { oneOf: AGENT_ACTION_SCHEMA.oneOf.filter((v) => v.properties.action.const !== 'fetch_document') };
}

export type ParsedAgentAction = { ok: true; action: AgentAction; repaired: boolean } | { ok: false; error: string };

/** Names the models write for the tools, mapped to ours (lower-cased, `-`/space as `_`). */
const ALIASES: Record<string, AgentActionName> = {
  dense_search: 'dense_search',
  dense: 'dense_search',
  search: 'dense_search',
  semantic_search: 'dense_search',
  vector_search: 'dense_search',
  keyword_search: 'keyword_search',
  keyword: 'keyword_search',
  bm25: 'keyword_search',
  lexical_search: 'keyword_search',
  filtered_search: 'filtered_search',
  filter_search: 'filtered_search',
  filter: 'filtered_search',
  fetch_document: 'fetch_document',
  fetch: 'fetch_document',
  fetch_parent: 'fetch_document',
  get_document: 'fetch_document',
  read_document: 'fetch_document',
  answer: 'answer',
  final_answer: 'answer',
  finish: 'answer',
  done: 'answer',
  stop: 'answer',
};

const FILTER_KEY = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * Parses what the LLM wrote for the next action. `maxRef` is the number of passages found so far (a
 * `fetch_document` must name one of them). Accepts the JSON wrapped in prose or a code fence, and repairs the usual
 * near-misses of small models (single quotes, unquoted keys, trailing commas, Python literals, a cut-off end).
 */
export function parseAgentAction(text: string, maxRef: number): ParsedAgentAction {
  if (typeof text !== 'string' || !text.trim()) return { ok: false, error: 'empty reply' };
  const trimmed = text.trim();
  let value: unknown;
  let repaired = false;
  try {
    value = JSON.parse(trimmed);
  } catch {
    const fixed = repairJsonObject(trimmed);
    if (fixed === undefined) return { ok: false, error: `no JSON object in the reply: ${JSON.stringify(trimmed.slice(0, 120))}` };
    try {
      value = JSON.parse(fixed);
      repaired = true;
    } catch (e) {
      return { ok: false, error: `the reply is not repairable JSON (${e instanceof Error ? e.message : String(e)}): ${JSON.stringify(trimmed.slice(0, 120))}` };
    }
  }
  const r = validateAgentAction(value, maxRef);
  return r.ok ? { ...r, repaired: r.repaired || repaired } : r;
}

/** Checks and normalises an already parsed action (e.g. the value of a grammar-constrained reply). */
export function validateAgentAction(value: unknown, maxRef: number): ParsedAgentAction {
  if (Array.isArray(value) && value.length > 0) value = value[0];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, error: 'the reply is not a JSON object' };
  let o = value as Record<string, unknown>;
  // {"action": {"name": ..., "arguments": {...}}} or {"tool": ..., "arguments": {...}}: flatten.
  if (typeof o['action'] === 'object' && o['action'] !== null && !Array.isArray(o['action'])) o = { ...(o['action'] as Record<string, unknown>), ...withoutKey(o, 'action') };
  const args = pickObject(o, ['arguments', 'args', 'parameters', 'input']);
  if (args) o = { ...args, ...o };
  const rawName = firstString(o, ['action', 'tool', 'name', 'type']);
  if (rawName === undefined) return { ok: false, error: 'the reply names no action' };
  const name = ALIASES[rawName.trim().toLowerCase().replace(/[\s-]+/g, '_')];
  if (!name) return { ok: false, error: `unknown action ${JSON.stringify(rawName.slice(0, 60))}` };
  const repaired = name !== rawName;
  switch (name) {
    case 'answer':
      return { ok: true, action: { action: 'answer' }, repaired };
    case 'dense_search':
    case 'keyword_search': {
      const q = cleanQuery(firstString(o, ['query', 'q', 'text', 'search']));
      if (!q) return { ok: false, error: `${name} needs a non-empty query` };
      return { ok: true, action: { action: name, query: q }, repaired };
    }
    case 'filtered_search': {
      const q = cleanQuery(firstString(o, ['query', 'q', 'text', 'search']));
      if (!q) return { ok: false, error: 'filtered_search needs a non-empty query' };
      const field = firstString(o, ['field', 'key', 'metadata_field'])?.trim();
      const raw = o['value'];
      const v = typeof raw === 'string' ? raw.trim() : typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : undefined;
      if (!field || !FILTER_KEY.test(field)) return { ok: false, error: 'filtered_search needs a metadata field name ([A-Za-z0-9_.-])' };
      if (!v) return { ok: false, error: 'filtered_search needs a value' };
      return { ok: true, action: { action: name, query: q, field, value: v.slice(0, 128) }, repaired };
    }
    case 'fetch_document': {
      const raw = o['ref'] ?? o['source'] ?? o['passage'] ?? o['id'];
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(/\d+/.exec(raw)?.[0] ?? NaN) : NaN;
      if (!Number.isInteger(n) || n < 1 || n > maxRef) return { ok: false, error: `fetch_document needs the number of a passage found so far (1..${maxRef})` };
      return { ok: true, action: { action: name, ref: n }, repaired };
    }
  }
}

function withoutKey(o: Record<string, unknown>, key: string): Record<string, unknown> {
  const { [key]: _drop, ...rest } = o;
  return rest;
}

function pickObject(o: Record<string, unknown>, keys: string[]): Record<string, unknown> | undefined {
  for (const k of keys) {
    const v = o[k];
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  }
  return undefined;
}

function firstString(o: Record<string, unknown>, keys: string[]): string | undefined {
  for (const k of keys) if (typeof o[k] === 'string') return o[k] as string;
  return undefined;
}

function cleanQuery(q: string | undefined): string {
  const s = (q ?? '').replace(/\s+/g, ' ').trim();
  if (s.length <= AGENT_MAX_QUERY_CHARS) return s;
  const cut = s.slice(0, AGENT_MAX_QUERY_CHARS);
  const space = cut.lastIndexOf(' ');
  return (space > AGENT_MAX_QUERY_CHARS / 2 ? cut.slice(0, space) : cut).trim();
}

/**
 * The first JSON object in `text` rewritten as strict JSON, or undefined when there is none: outside strings,
 * single-quoted strings become double-quoted, bare keys are quoted, `True/False/None` become JSON literals, trailing
 * commas go, and a reply cut off mid-object is closed (an open string, then the open brackets). Written here (a
 * small scanner) rather than taken from a package: no new dependency was allowed for this change, and the few
 * repairs that small models need fit in one pass; anything else is reported as not repairable.
 */
export function repairJsonObject(text: string): string | undefined {
  const start = text.indexOf('{');
  if (start < 0) return undefined;
  let out = '';
  const stack: string[] = [];
  let i = start;
  const n = text.length;
  while (i < n) {
    const ch = text[i]!;
    if (ch === '"' || ch === "'") {
      // A string: copy it as a JSON string (escaping what a single-quoted string may hold unescaped).
      const quote = ch;
      let s = '';
      i++;
      let closed = false;
      while (i < n) {
        const c = text[i]!;
        if (c === '\\' && i + 1 < n) {
          const next = text[i + 1]!;
          s += next === "'" ? "'" : c + next;
          i += 2;
          continue;
        }
        if (c === quote) {
          closed = true;
          i++;
          break;
        }
        if (c === '"') s += '\\"';
        else if (c === '\n') s += '\\n';
        else if (c === '\r') s += '\\r';
        else if (c === '\t') s += '\\t';
        else s += c;
        i++;
      }
      out += `"${s}"`;
      if (!closed) break;
      continue;
    }
    if (ch === '{' || ch === '[') {
      stack.push(ch === '{' ? '}' : ']');
      out += ch;
      i++;
      continue;
    }
    if (ch === '}' || ch === ']') {
      out = out.replace(/,\s*$/, '');
      if (stack.length === 0 || stack[stack.length - 1] !== ch) return undefined;
      stack.pop();
      out += ch;
      i++;
      if (stack.length === 0) return out;
      continue;
    }
    if (/[A-Za-z_$]/.test(ch)) {
      const m = /^[A-Za-z_$][A-Za-z0-9_$-]*/.exec(text.slice(i))!;
      const word = m[0];
      i += word.length;
      const rest = text.slice(i);
      if (/^\s*:/.test(rest)) out += JSON.stringify(word);
      else if (word === 'true' || word === 'True') out += 'true';
      else if (word === 'false' || word === 'False') out += 'false';
      else if (word === 'null' || word === 'None' || word === 'undefined') out += 'null';
      else out += JSON.stringify(word); // a bare word as a value: a string
      continue;
    }
    out += ch;
    i++;
  }
  if (stack.length === 0) return undefined;
  // Cut off: drop a dangling key or separator, then close what is open.
  out = out.replace(/,\s*$/, '').replace(/,?\s*"[^"]*"\s*:\s*$/, '').replace(/:\s*$/, ': null');
  while (stack.length) out += stack.pop();
  return out;
}

/** A stable key of an action, to notice when the agent asks for what it already did. */
export function actionKey(a: AgentAction): string {
  switch (a.action) {
    case 'answer':
      return 'answer';
    case 'fetch_document':
      return `fetch_document:${a.ref}`;
    case 'filtered_search':
      return `filtered_search:${a.field}=${a.value}:${a.query.toLowerCase()}`;
    default:
      return `${a.action}:${a.query.toLowerCase()}`;
  }
}
