import type { Block, Chunk, StructuredDocument } from '@rag/contracts';
import { chunkDocument } from './chunker';
import type { ChunkOptions } from './options';
import { countTokens } from './tokens';

/**
 * Invariants over many generated documents (mixed English/Chinese text, lists, tables, code, headings,
 * random option sizes), seeded so that a failure reproduces.
 */

function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 16807) % 2147483647;
    return s;
  };
}

const WORDS = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu 检索 增强 生成 系统 切分 3.14 x=1'.split(' ');
const JOINS = ['. ', ', ', ' ', ' ', ' ', '! ', '。', '，', '\n', '\n\n', '; ', '? ', ''];

function generate(r: () => number): { doc: StructuredDocument; opts: ChunkOptions } {
  const text = (n: number): string => Array.from({ length: n }, () => WORDS[r() % WORDS.length]! + JOINS[r() % JOINS.length]!).join('');
  const blocks: Block[] = [];
  const n = 1 + (r() % 9);
  for (let b = 0; b < n; b++) {
    const k = r() % 7;
    if (k === 0) blocks.push({ type: 'heading', level: 1 + (r() % 3), text: `H${b}` });
    else if (k === 1) blocks.push({ type: 'list', ordered: r() % 2 === 0, items: [text(3 + (r() % 20)), text(r() % 60)] });
    else if (k === 2) blocks.push({ type: 'table', header: r() % 2 === 0, rows: Array.from({ length: r() % 60 }, () => [text(1 + (r() % 5)), text(r() % 3)]) });
    else if (k === 3) blocks.push({ type: 'code', text: Array.from({ length: r() % 80 }, () => text(r() % 10)).join('\n') });
    else blocks.push({ type: 'paragraph', text: text(r() % 700) });
  }
  const chunkTokens = 20 + (r() % 200);
  const opts: ChunkOptions = { chunkTokens, overlapTokens: r() % chunkTokens, parentTokens: r() % 2 ? 0 : chunkTokens + (r() % 600) };
  const doc: StructuredDocument = {
    document_id: 'gen:1',
    tenant: 't',
    version: 2,
    title: 'Generated',
    mime_type: 'text/markdown',
    content_hash: 'b'.repeat(64),
    acl: ['*'],
    metadata: {},
    blocks,
  };
  return { doc, opts };
}

/** How often each non-space character occurs in the body of the input (headings excluded). */
function charCounts(texts: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of texts) for (const ch of t.replace(/\s+/g, '')) m.set(ch, (m.get(ch) ?? 0) + 1);
  return m;
}

function bodyTexts(doc: StructuredDocument): string[] {
  return doc.blocks.flatMap((b) => {
    if (b.type === 'heading') return [];
    if (b.type === 'list') return b.items;
    if (b.type === 'table') return b.rows.flat();
    return [b.text];
  });
}

const isAtomic = (c: Chunk): boolean => c.text.includes('| ') || c.text.startsWith('```');

describe('chunkDocument invariants on generated documents', () => {
  const r = lcg(20240601);
  const cases = Array.from({ length: 100 }, () => generate(r));

  it('keeps sizes, links, ids and text intact', () => {
    for (const { doc, opts } of cases) {
      const out = chunkDocument(doc, opts);
      const byId = new Map(out.map((c) => [c.chunk_id, c]));
      out.forEach((c, i) => {
        expect(c.ordinal).toBe(i);
        expect(c.chunk_id).toBe(`gen:1#v2#${i}`);
        expect(c.text.length).toBeGreaterThan(0);
        expect(c.text.trim()).toBe(c.text);
        expect(c.token_count).toBe(countTokens(c.text));
        if (c.kind === 'parent') {
          expect(opts.parentTokens).toBeGreaterThan(0);
          expect(c.parent_id).toBeNull();
          return;
        }
        if (opts.parentTokens === 0) expect(c.parent_id).toBeNull();
        else {
          const p = byId.get(c.parent_id!);
          expect(p?.kind).toBe('parent');
          expect(p!.text).toContain(c.text);
          expect(p!.heading_path).toEqual(c.heading_path);
        }
        if (!isAtomic(c)) expect(c.token_count).toBeLessThanOrEqual(opts.chunkTokens);
      });
      // Nothing is lost: the children hold every character of the body at least as often (overlaps,
      // repeated headers and Markdown syntax only add).
      const have = charCounts(out.filter((c) => c.kind === 'child').map((c) => c.text));
      for (const [ch, n] of charCounts(bodyTexts(doc))) expect(have.get(ch) ?? 0, ch).toBeGreaterThanOrEqual(n);
    }
  });

  it('is deterministic', () => {
    for (const { doc, opts } of cases.slice(0, 30)) expect(chunkDocument(structuredClone(doc), opts)).toEqual(chunkDocument(doc, opts));
  });
});
