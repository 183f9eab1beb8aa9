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

/** Every word of the input, as the chunks must still hold it somewhere. */
function words(doc: StructuredDocument): string[] {
  return doc.blocks.flatMap((b) => {
    if (b.type === 'heading') return [];
    const t = b.type === 'list' ? b.items.join(' ') : b.type === 'table' ? b.rows.flat().join(' ') : b.text;
    return t.split(/[\s。，.,!?;|]+/).filter((w) => w.length > 0);
  });
}

const isAtomic = (c: Chunk): boolean => c.text.includes('| ') || c.text.startsWith('```');

describe('chunkDocument invariants on generated documents', () => {
  const r = lcg(20240601);
  const cases = Array.from({ length: 150 }, () => generate(r));

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
      const all = out.map((c) => c.text).join('\n');
      for (const w of words(doc)) expect(all).toContain(w);
    }
  });

  it('is deterministic', () => {
    for (const { doc, opts } of cases.slice(0, 30)) expect(chunkDocument(structuredClone(doc), opts)).toEqual(chunkDocument(doc, opts));
  });
});
