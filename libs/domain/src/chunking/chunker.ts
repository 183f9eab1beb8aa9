import { chunkId, type Chunk, type StructuredDocument } from '@rag/contracts';
import { ATOMIC_FACTOR, validateChunkOptions, type ChunkOptions } from './options';
import { blockUnits, type TextUnit, type Unit } from './render';
import { tailWithin } from './split';
import { countTokens } from './tokens';

/**
 * Splits a structured document into chunks.
 *
 * Sections. Heading blocks are not chunk text: they set the heading path (a level-n heading replaces
 * the levels >= n), which every chunk carries in `heading_path` and which `embeddingText` puts in front
 * of the text. A chunk never spans two sections (a change of heading path); a heading with no content
 * under it yields nothing. A document whose only text is headings gives one chunk of those headings.
 *
 * Children (searched). Paragraphs and lists are split recursively at the coarsest boundary that makes
 * each piece fit `chunkTokens` (blank line, line, sentence `. ! ? 。！？；`, clause `, ; : ，；、：`,
 * word, and between token units as a last resort), then consecutive pieces of the section are packed greedily
 * up to `chunkTokens` (so small paragraphs, list items and small tables/code merge). A chunk that
 * continues the text of the one before it in the same section starts with that chunk's tail of at most
 * `overlapTokens`, cut at the coarsest boundary that fits (whole sentences when they fit, else
 * clauses, else words). The overlap yields to keeping a paragraph whole: it shrinks so the chunk stays
 * within `chunkTokens`, and it is dropped if the exact count of the assembled text still exceeds
 * `chunkTokens`. Tables and code are never overlapped; they are kept whole up to
 * `ATOMIC_FACTOR * chunkTokens` and make a chunk of their own when larger than `chunkTokens`, larger
 * ones are split (tables by rows with the header repeated, code by lines; see render.ts).
 *
 * Sizes: a text chunk has at most `chunkTokens` tokens (the packer sums piece counts and, once that
 * sum comes near the limit, counts the assembled text exactly), bar a single code point larger than
 * the limit; a table/code chunk has at most `ATOMIC_FACTOR * chunkTokens`, bar a table row or code
 * line that is by itself larger; `token_count` is the exact count of the chunk's text.
 *
 * Parents (handed to the generator), when `parentTokens > 0`: consecutive children of one section are
 * grouped while the group's text (the overlaps counted once) fits `parentTokens` (a child larger than
 * that gets a parent of its own). A parent's text is its children's text without the repeated
 * overlaps, so every child's text is a substring of its parent's.
 *
 * Ordinals: one sequence over the document in reading order, each parent right before its children
 * (P0, c1, c2, P3, c4, …); without parents, the children 0, 1, 2, … The id is
 * `chunkId(document_id, version, ordinal)`. The result is a pure function of the input: same document
 * and options, same chunks (ids, order, text).
 */
export function chunkDocument(doc: StructuredDocument, opts: ChunkOptions): Chunk[] {
  return buildChunks(doc, opts, Infinity);
}

export type ChunkingResult = { ok: true; chunks: Chunk[] } | { ok: false; code: 'too_many_chunks'; reason: string };

/** Thrown inside `buildChunks` to stop at the cap; never escapes `chunkDocumentWithin`. */
class ChunkCapReached extends Error {}

/**
 * `chunkDocument` with a cap on the number of chunks (parents and children): a document that would make more than
 * `maxChunks` is a `too_many_chunks` value, and chunking stops at the cap instead of building every chunk first.
 */
export function chunkDocumentWithin(doc: StructuredDocument, opts: ChunkOptions, maxChunks: number): ChunkingResult {
  if (!Number.isInteger(maxChunks) || maxChunks < 1) throw new Error(`invalid chunk cap: maxChunks must be a positive integer (got ${maxChunks})`);
  try {
    return { ok: true, chunks: buildChunks(doc, opts, maxChunks) };
  } catch (err) {
    if (err instanceof ChunkCapReached) {
      return { ok: false, code: 'too_many_chunks', reason: `the document makes more than ${maxChunks} chunks` };
    }
    throw err;
  }
}

function buildChunks(doc: StructuredDocument, opts: ChunkOptions, maxChunks: number): Chunk[] {
  validateChunkOptions(opts);
  const sections = collectSections(doc, opts);
  const out: Chunk[] = [];
  const base = {
    document_id: doc.document_id,
    tenant: doc.tenant,
    version: doc.version,
  };
  const make = (kind: Chunk['kind'], parentId: string | null, path: readonly string[], text: string, tokens: number): Chunk => {
    const ordinal = out.length;
    if (ordinal >= maxChunks) throw new ChunkCapReached();
    const chunk: Chunk = {
      chunk_id: chunkId(doc.document_id, doc.version, ordinal),
      ...base,
      ordinal,
      kind,
      parent_id: parentId,
      acl: [...doc.acl],
      title: doc.title,
      heading_path: [...path],
      ...(doc.source_url !== undefined ? { source_url: doc.source_url } : {}),
      metadata: cloneMetadata(doc.metadata),
      text,
      token_count: tokens,
    };
    out.push(chunk);
    return chunk;
  };

  for (const section of sections) {
    const drafts = packSection(section.units, opts);
    const children = drafts.map((d) => finishDraft(d, opts.chunkTokens));
    if (opts.parentTokens === 0) {
      for (const c of children) make('child', null, section.path, c.text, c.tokens);
      continue;
    }
    for (const group of groupParents(children, opts.parentTokens)) {
      const parentText = renderSegments(mergeSegments(group.flatMap((c) => c.segments)));
      const parent = make('parent', null, section.path, parentText, countTokens(parentText));
      for (const c of group) make('child', parent.chunk_id, section.path, c.text, c.tokens);
    }
  }
  return out;
}

function cloneMetadata(m: StructuredDocument['metadata']): StructuredDocument['metadata'] {
  const out: StructuredDocument['metadata'] = {};
  for (const [k, v] of Object.entries(m)) out[k] = Array.isArray(v) ? [...v] : v;
  return out;
}

// ------------------------------------------------------------------------------------------- sections

interface Section {
  path: string[];
  units: Unit[];
}

function collectSections(doc: StructuredDocument, opts: ChunkOptions): Section[] {
  const limits = { chunkTokens: opts.chunkTokens, atomicTokens: ATOMIC_FACTOR * opts.chunkTokens };
  const sections: Section[] = [];
  const headings: Array<{ level: number; text: string }> = [];
  let current: Section | null = null;
  for (const block of doc.blocks) {
    if (block.type === 'heading') {
      const text = block.text.replace(/\s+/g, ' ').trim();
      if (!text) continue;
      while (headings.length > 0 && headings[headings.length - 1]!.level >= block.level) headings.pop();
      headings.push({ level: block.level, text });
      current = null;
      continue;
    }
    const units = blockUnits(block, limits);
    if (units.length === 0) continue;
    if (!current) {
      current = { path: headings.map((h) => h.text), units: [] };
      sections.push(current);
    }
    current.units.push(...units);
  }
  if (sections.length === 0 && headings.length > 0) {
    // Only headings: they are the text (a title-only page is still findable).
    const texts = doc.blocks.flatMap((b) => (b.type === 'heading' && b.text.trim() ? [b.text.replace(/\s+/g, ' ').trim()] : []));
    const units = blockUnits({ type: 'paragraph', text: texts.join('\n') }, limits);
    if (units.length > 0) sections.push({ path: [], units });
  }
  return sections;
}

// -------------------------------------------------------------------------------------------- packing

/** A range of a text unit, or a whole table/code text. */
type Segment = { kind: 'text'; unit: TextUnit; start: number; end: number } | { kind: 'atomic'; text: string };

interface Draft {
  /** the tail of the previous chunk this one starts with */
  overlap: { unit: TextUnit; start: number; end: number; tokens: number } | null;
  segments: Segment[];
  /** estimated tokens of the own segments (not the overlap): piece counts plus joints */
  tokens: number;
  /** pieces joined so far: each joint may cost a token more than estimated */
  joints: number;
}

/** A blank line between segments is one token; a newline inside a unit is about one too. */
const JOINT = 1;
/** Within this many tokens (plus one per joint) of the limit the packer checks the exact count. */
const EXACT_CHECK_MARGIN = 8;

function draftText(d: Draft): string {
  return renderSegments(d.overlap ? mergeSegments([{ kind: 'text', ...d.overlap }, ...d.segments]) : d.segments);
}

function packSection(units: readonly Unit[], opts: ChunkOptions): Draft[] {
  const limit = opts.chunkTokens;
  const drafts: Draft[] = [];
  let cur: Draft | null = null;
  const flush = (): void => {
    if (cur && cur.segments.length > 0) drafts.push(cur);
    cur = null;
  };
  const size = (d: Draft): number => d.tokens + (d.overlap ? d.overlap.tokens + JOINT : 0);
  // The estimate sums piece counts; close to the limit, the assembled text is counted exactly, so that
  // joints that cost more than estimated never push a chunk over.
  const overLimit = (d: Draft): boolean => size(d) > limit - EXACT_CHECK_MARGIN - d.joints && countTokens(draftText(d)) > limit;

  for (const unit of units) {
    if (unit.kind === 'atomic') {
      if (unit.solo) {
        flush();
        drafts.push({ overlap: null, segments: [{ kind: 'atomic', text: unit.text }], tokens: unit.tokens, joints: 0 });
        continue;
      }
      const d: Draft | null = cur;
      if (d && size(d) + JOINT + unit.tokens <= limit) {
        d.segments.push({ kind: 'atomic', text: unit.text });
        d.tokens += JOINT + unit.tokens;
        d.joints++;
        if (!overLimit(d)) continue;
        d.segments.pop();
        d.tokens -= JOINT + unit.tokens;
        d.joints--;
      }
      flush();
      cur = { overlap: null, segments: [{ kind: 'atomic', text: unit.text }], tokens: unit.tokens, joints: 0 };
      continue;
    }
    for (const atom of unit.atoms) {
      const d: Draft | null = cur;
      const last = d?.segments[d.segments.length - 1];
      const same = last?.kind === 'text' && last.unit === unit ? last : null;
      const joint = !d ? 0 : same ? (unit.text.slice(same.end, atom.start).includes('\n') ? JOINT : 0) : JOINT;
      if (d && size(d) + joint + atom.tokens <= limit) {
        const end = same?.end ?? 0;
        if (same) same.end = atom.end;
        else d.segments.push({ kind: 'text', unit, start: atom.start, end: atom.end });
        d.tokens += joint + atom.tokens;
        d.joints++;
        if (!overLimit(d)) continue;
        if (same) same.end = end;
        else d.segments.pop();
        d.tokens -= joint + atom.tokens;
        d.joints--;
      }
      // Start a new chunk; it continues the text of the one just closed, so it takes its tail as overlap.
      const prevLast = d?.segments[d.segments.length - 1];
      flush();
      const next: Draft = { overlap: null, segments: [{ kind: 'text', unit, start: atom.start, end: atom.end }], tokens: atom.tokens, joints: 0 };
      if (prevLast?.kind === 'text' && opts.overlapTokens > 0) {
        const budget = Math.min(opts.overlapTokens, limit - atom.tokens - JOINT);
        const tail = tailWithin(prevLast.unit.text, prevLast.start, prevLast.end, budget);
        if (tail) next.overlap = { unit: prevLast.unit, start: tail.start, end: tail.end, tokens: tail.tokens };
      }
      cur = next;
    }
  }
  flush();
  return drafts;
}

interface Child {
  text: string;
  tokens: number;
  /** overlap first (when any), then the own segments: what the parent merges */
  segments: Segment[];
  overlapTokens: number;
}

function finishDraft(d: Draft, limit: number): Child {
  const own = renderSegments(d.segments);
  if (d.overlap) {
    // Dropped if the chunk would exceed the limit with it (the estimate of the joint was short).
    const segments = mergeSegments([{ kind: 'text', ...d.overlap }, ...d.segments]);
    const text = renderSegments(segments);
    const tokens = countTokens(text);
    if (tokens <= limit) return { text, tokens, segments, overlapTokens: d.overlap.tokens };
  }
  return { text: own, tokens: countTokens(own), segments: d.segments.map((s) => ({ ...s })), overlapTokens: 0 };
}

/** Joins consecutive ranges of one text unit (overlap + continuation) into one range. */
function mergeSegments(segments: readonly Segment[]): Segment[] {
  const out: Segment[] = [];
  for (const s of segments) {
    const last = out[out.length - 1];
    if (s.kind === 'text' && last?.kind === 'text' && last.unit === s.unit && s.start <= last.end + gap(s.unit.text, last.end, s.start)) {
      last.start = Math.min(last.start, s.start);
      last.end = Math.max(last.end, s.end);
      continue;
    }
    out.push({ ...s });
  }
  return out;
}

/** Length of the whitespace between `from` and `to` (so ranges separated only by spaces are adjacent). */
function gap(text: string, from: number, to: number): number {
  if (to <= from) return 0;
  return /^\s*$/.test(text.slice(from, to)) ? to - from : -1;
}

function renderSegments(segments: readonly Segment[]): string {
  return segments.map((s) => (s.kind === 'text' ? s.unit.text.slice(s.start, s.end) : s.text)).join('\n\n');
}

// -------------------------------------------------------------------------------------------- parents

function groupParents(children: readonly Child[], parentTokens: number): Child[][] {
  const groups: Child[][] = [];
  let group: Child[] = [];
  let used = 0;
  for (const c of children) {
    // The first child of a group brings its overlap along; later ones share it with their predecessor.
    const add = group.length === 0 ? c.tokens : c.tokens - c.overlapTokens + JOINT;
    if (group.length > 0 && used + add > parentTokens) {
      groups.push(group);
      group = [];
      used = 0;
    }
    used += group.length === 0 ? c.tokens : add;
    group.push(c);
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

// ------------------------------------------------------------------------------------ embedding text

const MAX_PREFIX_CHARS = 200;

/**
 * The text fed to the embedder: one short context line, `title > h1 > h2`, then the chunk text.
 * The line places a chunk whose text does not name its subject ("It supports up to 8 replicas.") and
 * costs a few tokens; it is capped at 200 characters (the head of the path is kept: a long title
 * would otherwise eat the embedder's window), a heading equal to the title or to its parent heading
 * is not repeated, and nothing is prefixed when there is no title or heading.
 */
export function embeddingText(chunk: Pick<Chunk, 'title' | 'heading_path' | 'text' | 'context'>): string {
  const parts: string[] = [];
  for (const raw of [chunk.title, ...chunk.heading_path]) {
    const p = raw.replace(/\s+/g, ' ').trim();
    if (!p) continue;
    const prev = parts[parts.length - 1];
    if (prev !== undefined && prev.toLowerCase() === p.toLowerCase()) continue;
    parts.push(p);
  }
  let prefix = parts.join(' > ');
  if (prefix.length > MAX_PREFIX_CHARS) prefix = `${Array.from(prefix).slice(0, MAX_PREFIX_CHARS - 1).join('').trimEnd()}…`;
  // Contextual retrieval: the LLM-written context goes between the heading line and the text.
  const context = chunk.context?.trim();
  const body = context ? `${context}\n${chunk.text}` : chunk.text;
  return prefix ? `${prefix}\n${body}` : body;
}

/**
 * The text a child chunk is indexed under for BM25 (embedded and OpenSearch/Elasticsearch alike): title, heading
 * path, the LLM-written context when it has one (RAG_CONTEXTUAL_CHUNKS), then the text.
 */
export function keywordText(chunk: Pick<Chunk, 'title' | 'heading_path' | 'text' | 'context'>): string {
  return [chunk.title, ...chunk.heading_path, chunk.context?.trim() ?? '', chunk.text].filter((s) => s.length > 0).join('\n');
}
