import { ChunkSchema, parseChunkId, type Block, type Chunk, type StructuredDocument } from '@rag/contracts';
import { chunkDocument, chunkDocumentWithin, embeddingText } from './chunker';
import { DEFAULT_CHUNK_OPTIONS, validateChunkOptions, type ChunkOptions } from './options';
import { countTokens } from './tokens';

// ------------------------------------------------------------------------------------------- fixtures

function doc(blocks: Block[], over: Partial<StructuredDocument> = {}): StructuredDocument {
  return {
    document_id: 'upload:doc-1',
    tenant: 'acme',
    version: 3,
    title: 'Wing Aerodynamics Handbook',
    source_url: 'https://wiki.example.com/wing',
    mime_type: 'text/markdown',
    content_hash: 'a'.repeat(64),
    acl: ['group:eng', 'user:ann'],
    metadata: { space: 'ENG', year: 2024, draft: false, tags: ['aero', 'wing'] },
    blocks,
    ...over,
  };
}

/** Deterministic pseudo-random generator (tests must not depend on Math.random). */
function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 16807) % 2147483647;
    return s;
  };
}

const WORDS = (
  'boundary layer heat transfer supersonic flow flat plate wing slipstream pressure distribution shock wave ' +
  'viscous incompressible fluid experimental results theory velocity angle attack lift drag model tunnel'
).split(' ');

/** `n` English sentences of 8–20 words, each numbered so it can be found again: "S12 w w w." */
function englishSentences(n: number, seed = 1): string[] {
  const r = lcg(seed);
  return Array.from({ length: n }, (_, i) => {
    const len = 8 + (r() % 13);
    const words = Array.from({ length: len }, () => WORDS[r() % WORDS.length]!);
    const mid = r() % 3 === 0 ? `${words.slice(0, len >> 1).join(' ')}, ${words.slice(len >> 1).join(' ')}` : words.join(' ');
    return `S${i} ${mid}${['.', '!', '?', '.'][r() % 4]}`;
  });
}

const HAN = '的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经';
/** `n` Chinese sentences of 6–16 characters, no spaces, ending in 。！？, some with a ， inside. */
function chineseSentences(n: number, seed = 7, minLen = 6, spread = 11): string[] {
  const r = lcg(seed);
  return Array.from({ length: n }, () => {
    const len = minLen + (r() % spread);
    let s = '';
    for (let i = 0; i < len; i++) {
      s += HAN[r() % HAN.length];
      if (i === len >> 1 && r() % 2 === 0) s += '，';
    }
    return s + '。！？'[r() % 3];
  });
}

const norm = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** The longest prefix of `next` that is also a suffix of `prev` (the overlap). */
function overlapOf(prev: string, next: string): string {
  for (let k = Math.min(prev.length, next.length); k > 0; k--) if (prev.endsWith(next.slice(0, k))) return next.slice(0, k);
  return '';
}

/** Children texts glued back with their overlaps removed. */
function stitch(children: readonly Chunk[]): string {
  let out = '';
  let prev = '';
  for (const c of children) {
    const o = overlapOf(prev, c.text);
    out += ' ' + c.text.slice(o.length);
    prev = c.text;
  }
  return norm(out);
}

const children = (cs: readonly Chunk[]): Chunk[] => cs.filter((c) => c.kind === 'child');

// -------------------------------------------------------------------------------------------- options

describe('chunk options', () => {
  it('accepts the defaults', () => {
    expect(() => validateChunkOptions(DEFAULT_CHUNK_OPTIONS)).not.toThrow();
    expect(DEFAULT_CHUNK_OPTIONS).toEqual({ chunkTokens: 200, overlapTokens: 30, parentTokens: 800 });
  });

  it.each<[string, ChunkOptions, RegExp]>([
    ['overlap equal to the chunk size', { chunkTokens: 100, overlapTokens: 100, parentTokens: 0 }, /overlapTokens \(100\) must be smaller than chunkTokens \(100\)/],
    ['overlap larger than the chunk size', { chunkTokens: 100, overlapTokens: 150, parentTokens: 0 }, /must be smaller/],
    ['a zero chunk size', { chunkTokens: 0, overlapTokens: 0, parentTokens: 0 }, /chunkTokens must be a positive integer/],
    ['a negative overlap', { chunkTokens: 100, overlapTokens: -1, parentTokens: 0 }, /overlapTokens must be a non-negative integer/],
    ['a fractional size', { chunkTokens: 100.5, overlapTokens: 10, parentTokens: 0 }, /chunkTokens must be a positive integer/],
    ['NaN', { chunkTokens: Number.NaN, overlapTokens: 10, parentTokens: 0 }, /chunkTokens/],
    ['a negative parent size', { chunkTokens: 100, overlapTokens: 10, parentTokens: -5 }, /parentTokens must be 0 or a positive integer/],
    ['parents smaller than children', { chunkTokens: 100, overlapTokens: 10, parentTokens: 50 }, /parentTokens \(50\) must be 0 \(no parents\) or at least chunkTokens/],
  ])('rejects %s with a clear configuration error', (_label, opts, message) => {
    expect(() => validateChunkOptions(opts)).toThrow(message);
    expect(() => chunkDocument(doc([{ type: 'paragraph', text: 'x' }]), opts)).toThrow(/^invalid chunk options: /);
  });
});

// -------------------------------------------------------------------------------------------- basics

describe('chunkDocument: empty input', () => {
  it('returns [] for a document without blocks', () => {
    expect(chunkDocument(doc([]), DEFAULT_CHUNK_OPTIONS)).toEqual([]);
  });

  it('returns [] when every block is whitespace', () => {
    const blocks: Block[] = [
      { type: 'paragraph', text: '   \n\t ' },
      { type: 'list', ordered: false, items: ['', '  '] },
      { type: 'table', header: true, rows: [['', ' '], ['  ', '']] },
      { type: 'code', text: '\n\n   \n' },
      { type: 'heading', level: 2, text: '   ' },
    ];
    expect(chunkDocument(doc(blocks), DEFAULT_CHUNK_OPTIONS)).toEqual([]);
  });

  it('keeps a document made only of headings findable as one chunk', () => {
    const out = chunkDocument(doc([{ type: 'heading', level: 1, text: 'Release notes' }, { type: 'heading', level: 2, text: 'Nothing yet' }]), {
      ...DEFAULT_CHUNK_OPTIONS,
      parentTokens: 0,
    });
    expect(out.map((c) => c.text)).toEqual(['Release notes\nNothing yet']);
  });
});

describe('chunkDocument: long English text', () => {
  const opts: ChunkOptions = { chunkTokens: 80, overlapTokens: 20, parentTokens: 0 };
  const paragraphs = [englishSentences(30, 1), englishSentences(25, 2), englishSentences(40, 3)].map((ss) => ss.join(' '));
  const out = chunkDocument(doc(paragraphs.map((text) => ({ type: 'paragraph', text }))), opts);

  it('splits into many chunks, each within chunkTokens (strictly) and with an exact token_count', () => {
    expect(out.length).toBeGreaterThan(10);
    for (const c of out) {
      expect(c.token_count).toBe(countTokens(c.text));
      expect(c.token_count).toBeLessThanOrEqual(opts.chunkTokens);
      expect(c.text.trim()).toBe(c.text);
      expect(c.text.length).toBeGreaterThan(0);
    }
    // and they are reasonably full, not cut into crumbs
    const avg = out.reduce((n, c) => n + c.token_count, 0) / out.length;
    expect(avg).toBeGreaterThan(opts.chunkTokens * 0.6);
  });

  it('cuts between sentences: a chunk ends with the end of a sentence', () => {
    for (const c of out) expect(c.text).toMatch(/[.!?]$/);
  });

  it('starts each chunk that continues a paragraph with the tail of the previous chunk', () => {
    let withOverlap = 0;
    for (let i = 1; i < out.length; i++) {
      const o = overlapOf(out[i - 1]!.text, out[i]!.text).trim();
      if (!o) continue;
      withOverlap++;
      expect(countTokens(o)).toBeLessThanOrEqual(opts.overlapTokens);
      // cut at a boundary: the overlap starts at a word of the previous chunk
      const prev = out[i - 1]!.text;
      const at = prev.length - overlapOf(prev, out[i]!.text).length;
      expect(at === 0 || /\s/.test(prev[at - 1]!)).toBe(true);
    }
    // Every cut inside a paragraph carries overlap (the 2 cuts between paragraphs may or may not).
    expect(withOverlap).toBeGreaterThanOrEqual(out.length - 1 - 2);
  });

  it('loses and reorders nothing: the chunks without their overlaps are the original text', () => {
    expect(stitch(out)).toBe(norm(paragraphs.join(' ')));
  });

  it('carries no overlap when overlapTokens is 0', () => {
    const noOverlap = chunkDocument(doc(paragraphs.map((text) => ({ type: 'paragraph', text }))), { ...opts, overlapTokens: 0 });
    expect(norm(noOverlap.map((c) => c.text).join(' '))).toBe(norm(paragraphs.join(' ')));
  });

  it('merges small adjacent blocks of a section up to chunkTokens', () => {
    const blocks: Block[] = [
      { type: 'paragraph', text: 'First short paragraph.' },
      { type: 'paragraph', text: 'Second short paragraph.' },
      { type: 'list', ordered: true, items: ['alpha', 'beta', ''] },
      { type: 'list', ordered: false, items: ['gamma'] },
    ];
    const merged = chunkDocument(doc(blocks), opts);
    expect(merged.map((c) => c.text)).toEqual(['First short paragraph.\n\nSecond short paragraph.\n\n1. alpha\n2. beta\n\n- gamma']);
  });

  it('falls back to clauses, then words, for a sentence longer than the limit', () => {
    const long = `${Array.from({ length: 60 }, (_, i) => `clause${i} has words`).join(', ')}.`;
    const pieces = chunkDocument(doc([{ type: 'paragraph', text: long }]), { chunkTokens: 40, overlapTokens: 0, parentTokens: 0 });
    expect(pieces.length).toBeGreaterThan(3);
    for (const c of pieces) {
      expect(c.token_count).toBeLessThanOrEqual(40);
      expect(c.text).toMatch(/^clause\d+ has words/);
      expect(c.text).toMatch(/(,|\.)$/);
    }
    expect(norm(pieces.map((c) => c.text).join(' '))).toBe(norm(long));
  });
});

describe('chunkDocument: Chinese without spaces', () => {
  const sentences = chineseSentences(120);
  const text = sentences.join('');
  const isSentenceStart = (pos: number): boolean => pos === 0 || /[。！？]/.test(text[pos - 1]!);

  it.each<[string, ChunkOptions]>([
    ['without overlap', { chunkTokens: 60, overlapTokens: 0, parentTokens: 0 }],
    ['with overlap', { chunkTokens: 60, overlapTokens: 30, parentTokens: 0 }],
  ])('cuts only at 。！？ %s: every chunk starts and ends at a sentence boundary', (label, opts) => {
    const out = chunkDocument(doc([{ type: 'paragraph', text }]), opts);
    expect(out.length).toBeGreaterThan(5);
    for (const c of out) {
      expect(c.token_count).toBeLessThanOrEqual(opts.chunkTokens);
      expect(c.text).toMatch(/[。！？]$/);
      const at = text.indexOf(c.text);
      expect(at).toBeGreaterThanOrEqual(0);
      expect(isSentenceStart(at)).toBe(true);
    }
    if (label === 'with overlap') {
      const overlapping = out.slice(1).filter((c, i) => overlapOf(out[i]!.text, c.text).length > 0);
      expect(overlapping.length).toBeGreaterThanOrEqual(out.length - 2);
    }
  });

  it('cuts a sentence longer than the limit at ，, then between characters, never losing text', () => {
    const r = lcg(3);
    const clause = (): string => Array.from({ length: 20 }, () => HAN[r() % HAN.length]).join('');
    const longSentence = `${Array.from({ length: 8 }, clause).join('，')}。`;
    const unbroken = Array.from({ length: 150 }, () => HAN[r() % HAN.length]).join('');
    const opts: ChunkOptions = { chunkTokens: 50, overlapTokens: 0, parentTokens: 0 };
    const a = chunkDocument(doc([{ type: 'paragraph', text: longSentence }]), opts);
    expect(a.length).toBeGreaterThan(1);
    for (const c of a) expect(c.text).toMatch(/[，。]$/);
    expect(a.map((c) => c.text).join('')).toBe(longSentence);

    const b = chunkDocument(doc([{ type: 'paragraph', text: unbroken }]), opts);
    expect(b.length).toBeGreaterThan(2);
    for (const c of b) expect(c.token_count).toBeLessThanOrEqual(50);
    expect(b.map((c) => c.text).join('')).toBe(unbroken);
  });
});

// -------------------------------------------------------------------------------------------- headings

describe('chunkDocument: sections', () => {
  const para = (tag: string, n: number): Block => ({ type: 'paragraph', text: englishSentences(n, tag.length * 13).map((s) => `${tag} ${s}`).join(' ') });
  const blocks: Block[] = [
    para('INTRO', 2),
    { type: 'heading', level: 1, text: 'Overview' },
    para('OV', 3),
    { type: 'heading', level: 2, text: 'Lift' },
    para('LIFT', 12),
    para('LIFT', 2),
    { type: 'heading', level: 2, text: 'Drag' },
    para('DRAG', 2),
    { type: 'heading', level: 3, text: 'Empty subsection' },
    { type: 'heading', level: 1, text: 'Appendix' },
    { type: 'heading', level: 3, text: 'Tables' },
    para('APPX', 2),
  ];
  const expected: Array<[string, string[]]> = [
    ['INTRO', []],
    ['OV', ['Overview']],
    ['LIFT', ['Overview', 'Lift']],
    ['DRAG', ['Overview', 'Drag']],
    ['APPX', ['Appendix', 'Tables']],
  ];

  it.each<[string, ChunkOptions]>([
    ['small chunks', { chunkTokens: 60, overlapTokens: 15, parentTokens: 0 }],
    ['large chunks', { chunkTokens: 2000, overlapTokens: 15, parentTokens: 0 }],
    ['parent-child', { chunkTokens: 60, overlapTokens: 15, parentTokens: 10_000 }],
  ])('gives each chunk its heading path and never mixes sections (%s)', (_label, opts) => {
    const out = chunkDocument(doc(blocks), opts);
    for (const c of out) {
      const tags = new Set(c.text.match(/\b(INTRO|OV|LIFT|DRAG|APPX)\b/g));
      expect(tags.size).toBe(1);
      const tag = [...tags][0]!;
      expect(c.heading_path).toEqual(expected.find(([t]) => t === tag)![1]);
      // headings live in heading_path, not in the text
      expect(c.text).not.toMatch(/Overview|Appendix|Empty subsection/);
    }
    // every section is present, in document order
    const order = [...new Set(out.map((c) => c.text.match(/\b(INTRO|OV|LIFT|DRAG|APPX)\b/)![1]))];
    expect(order).toEqual(expected.map(([t]) => t));
  });

  it('makes exactly one chunk per section when everything fits', () => {
    const out = chunkDocument(doc(blocks), { chunkTokens: 2000, overlapTokens: 0, parentTokens: 0 });
    expect(out.map((c) => c.heading_path)).toEqual(expected.map(([, p]) => p));
  });
});

// ------------------------------------------------------------------------------------- tables and code

describe('chunkDocument: tables', () => {
  const opts: ChunkOptions = { chunkTokens: 100, overlapTokens: 20, parentTokens: 0 };

  it('renders a table as Markdown rows and keeps it whole with its neighbours when it fits', () => {
    const out = chunkDocument(
      doc([
        { type: 'paragraph', text: 'Measured coefficients:' },
        { type: 'table', header: true, caption: 'Table 1: lift', rows: [['Angle', 'CL'], ['0', '0.1'], ['5', '0.6|0.7'], ['10', '1.1\n(stall)']] },
      ]),
      opts,
    );
    expect(out).toHaveLength(1);
    expect(out[0]!.text).toBe(
      'Measured coefficients:\n\nTable 1: lift\n| Angle | CL |\n| --- | --- |\n| 0 | 0.1 |\n| 5 | 0.6\\|0.7 |\n| 10 | 1.1 (stall) |',
    );
  });

  it('keeps a table up to twice chunkTokens whole, as a chunk of its own, without overlap', () => {
    const rows = [['id', 'name', 'value'], ...Array.from({ length: 14 }, (_, i) => [`${i}`, `item number ${i}`, `${i * 7}`])];
    const tokens = countTokens(rows.map((r) => `| ${r.join(' | ')} |`).join('\n'));
    expect(tokens).toBeGreaterThan(opts.chunkTokens);
    expect(tokens).toBeLessThan(opts.chunkTokens * 2 - 20);
    const long = englishSentences(12).join(' ');
    const out = chunkDocument(doc([{ type: 'paragraph', text: long }, { type: 'table', header: true, rows }, { type: 'paragraph', text: long }]), opts);
    const tables = out.filter((c) => c.text.includes('| id | name | value |'));
    expect(tables).toHaveLength(1);
    expect(tables[0]!.text.startsWith('| id | name | value |\n| --- | --- | --- |\n| 0 | item number 0 | 0 |')).toBe(true);
    expect(tables[0]!.text.endsWith('| 13 | item number 13 | 91 |')).toBe(true);
    const i = out.indexOf(tables[0]!);
    expect(out[i + 1]!.text.startsWith('S0 ')).toBe(true);
  });

  it('splits a huge table by rows, repeating the caption and header in every piece', () => {
    const rows = [['Station', 'Pressure', 'Notes'], ...Array.from({ length: 120 }, (_, i) => [`st-${i}`, `${1000 + i}`, `reading ${i} nominal`])];
    const out = chunkDocument(doc([{ type: 'table', header: true, caption: 'Pressure survey', rows }]), opts);
    expect(out.length).toBeGreaterThan(5);
    const seen: string[] = [];
    for (const c of out) {
      const lines = c.text.split('\n');
      expect(lines.slice(0, 3)).toEqual(['Pressure survey', '| Station | Pressure | Notes |', '| --- | --- | --- |']);
      expect(lines.length).toBeGreaterThan(3);
      expect(c.token_count).toBeLessThanOrEqual(opts.chunkTokens);
      seen.push(...lines.slice(3));
    }
    expect(seen).toEqual(rows.slice(1).map((r) => `| ${r.join(' | ')} |`));
  });

  it('renders a table without a header as plain rows', () => {
    const out = chunkDocument(doc([{ type: 'table', header: false, rows: [['a', 'b'], ['c']] }]), opts);
    expect(out.map((c) => c.text)).toEqual(['| a | b |\n| c |  |']);
  });
});

describe('chunkDocument: code', () => {
  const opts: ChunkOptions = { chunkTokens: 100, overlapTokens: 20, parentTokens: 0 };
  const codeLines = (n: number): string[] =>
    Array.from({ length: n }, (_, i) => (i % 7 === 6 ? '' : `${'  '.repeat(i % 3)}const value${i} = compute(${i}, "arg ${i}"); // step ${i}`));

  it('keeps a code block whole, fenced with its language', () => {
    const code = codeLines(9).join('\n');
    expect(countTokens(code)).toBeGreaterThan(opts.chunkTokens);
    expect(countTokens(code)).toBeLessThan(opts.chunkTokens * 2 - 10);
    const out = chunkDocument(doc([{ type: 'code', language: 'ts', text: `\n${code}\n\n` }]), opts);
    expect(out.map((c) => c.text)).toEqual([`\`\`\`ts\n${code}\n\`\`\``]);
  });

  it('splits a large code block on line boundaries only', () => {
    const lines = codeLines(150);
    const out = chunkDocument(doc([{ type: 'code', language: 'ts', text: lines.join('\n') }]), opts);
    expect(out.length).toBeGreaterThan(5);
    const seen: string[] = [];
    for (const c of out) {
      const inner = c.text.split('\n');
      expect(inner[0]).toBe('```ts');
      expect(inner[inner.length - 1]).toBe('```');
      for (const l of inner.slice(1, -1)) expect(lines).toContain(l);
      expect(c.token_count).toBeLessThanOrEqual(opts.chunkTokens);
      seen.push(...inner.slice(1, -1));
    }
    expect(seen.filter((l) => l)).toEqual(lines.filter((l) => l));
  });

  it('uses a longer fence when the code contains one', () => {
    const out = chunkDocument(doc([{ type: 'code', text: 'echo "```"' }]), opts);
    expect(out[0]!.text).toBe('````\necho "```"\n````');
  });
});

// -------------------------------------------------------------------------------------- parent-child

describe('chunkDocument: parent-child', () => {
  const opts: ChunkOptions = { chunkTokens: 60, overlapTokens: 15, parentTokens: 200 };
  const blocks: Block[] = [
    { type: 'heading', level: 1, text: 'A' },
    { type: 'paragraph', text: englishSentences(40, 5).join(' ') },
    { type: 'table', header: true, rows: [['k', 'v'], ...Array.from({ length: 40 }, (_, i) => [`key${i}`, `value ${i}`])] },
    { type: 'heading', level: 1, text: 'B' },
    { type: 'paragraph', text: chineseSentences(30).join('') },
    { type: 'paragraph', text: 'A short closing paragraph.' },
  ];
  const out = chunkDocument(doc(blocks), opts);
  const byId = new Map(out.map((c) => [c.chunk_id, c]));

  it('links every child to an existing parent of the same section that contains its text', () => {
    const kids = children(out);
    expect(kids.length).toBeGreaterThan(out.length / 2);
    for (const c of kids) {
      const p = byId.get(c.parent_id ?? '');
      expect(p).toBeDefined();
      expect(p!.kind).toBe('parent');
      expect(p!.parent_id).toBeNull();
      expect(p!.heading_path).toEqual(c.heading_path);
      expect(p!.text).toContain(c.text);
      expect(p!.ordinal).toBeLessThan(c.ordinal);
    }
  });

  it('orders each parent right before its children, parents within parentTokens', () => {
    const parents = out.filter((c) => c.kind === 'parent');
    expect(parents.length).toBeGreaterThan(2);
    let current: Chunk | undefined;
    for (const c of out) {
      if (c.kind === 'parent') {
        current = c;
        expect(c.token_count).toBe(countTokens(c.text));
        expect(c.token_count).toBeLessThanOrEqual(opts.parentTokens + 5);
      } else expect(c.parent_id).toBe(current!.chunk_id);
    }
    for (const p of parents) expect(out.some((c) => c.parent_id === p.chunk_id)).toBe(true);
  });

  it('does not repeat the children overlaps inside a parent', () => {
    for (const p of out.filter((c) => c.kind === 'parent')) {
      const kids = out.filter((c) => c.parent_id === p.chunk_id);
      if (kids.some((k) => k.text.includes('|'))) continue; // table pieces repeat their header by design
      expect(p.text.replace(/\s+/g, '')).toBe(stitch(kids).replace(/\s+/g, ''));
    }
  });

  it('emits only children with parent_id null when parentTokens is 0', () => {
    const flat = chunkDocument(doc(blocks), { ...opts, parentTokens: 0 });
    expect(flat.every((c) => c.kind === 'child' && c.parent_id === null)).toBe(true);
    expect(flat.map((c) => c.text)).toEqual(children(out).map((c) => c.text));
  });
});

// ---------------------------------------------------------------------------------- identity, fields

describe('chunkDocument: ids, fields, determinism', () => {
  const blocks: Block[] = [
    { type: 'heading', level: 1, text: 'Intro' },
    { type: 'paragraph', text: englishSentences(30, 9).join(' ') },
    { type: 'list', ordered: false, items: englishSentences(6, 4) },
    { type: 'code', language: 'py', text: 'def f(x):\n    return x * 2\n' },
    { type: 'heading', level: 2, text: '细节' },
    { type: 'paragraph', text: chineseSentences(40).join('') },
  ];
  const d = doc(blocks);

  it('is deterministic: two runs give identical chunks', () => {
    const a = chunkDocument(d, DEFAULT_CHUNK_OPTIONS);
    const b = chunkDocument(structuredClone(d), DEFAULT_CHUNK_OPTIONS);
    expect(b).toEqual(a);
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
  });

  it('numbers chunks 0..n-1 with ids `${document_id}#v${version}#${ordinal}`', () => {
    for (const opts of [DEFAULT_CHUNK_OPTIONS, { chunkTokens: 50, overlapTokens: 10, parentTokens: 0 }, { chunkTokens: 50, overlapTokens: 10, parentTokens: 120 }]) {
      const out = chunkDocument(d, opts);
      expect(out.map((c) => c.ordinal)).toEqual(out.map((_, i) => i));
      expect(new Set(out.map((c) => c.chunk_id)).size).toBe(out.length);
      for (const c of out) {
        expect(c.chunk_id).toBe(`upload:doc-1#v3#${c.ordinal}`);
        expect(parseChunkId(c.chunk_id)).toEqual({ document_id: 'upload:doc-1', version: 3, ordinal: c.ordinal });
      }
    }
  });

  it('carries the document fields on every chunk and validates against the Chunk schema', () => {
    const out = chunkDocument(d, { chunkTokens: 50, overlapTokens: 10, parentTokens: 120 });
    for (const c of out) {
      expect(ChunkSchema.parse(c)).toEqual(c);
      expect(c).toMatchObject({
        document_id: d.document_id,
        tenant: d.tenant,
        version: d.version,
        title: d.title,
        source_url: d.source_url,
        acl: d.acl,
        metadata: d.metadata,
      });
      expect(c.text.trim().length).toBeGreaterThan(0);
      expect(c.token_count).toBe(countTokens(c.text));
    }
  });

  it('gives every chunk its own copies of acl, metadata and heading_path', () => {
    const out = chunkDocument(d, DEFAULT_CHUNK_OPTIONS);
    (out[0]!.metadata['tags'] as string[]).push('mutated');
    out[0]!.acl.push('mutated');
    out[0]!.heading_path.push('mutated');
    expect(d.metadata['tags']).toEqual(['aero', 'wing']);
    expect(d.acl).toEqual(['group:eng', 'user:ann']);
    expect(out[1]!.heading_path).not.toContain('mutated');
  });

  it('omits source_url when the document has none', () => {
    const out = chunkDocument(doc([{ type: 'paragraph', text: 'x y z.' }], { source_url: undefined }), DEFAULT_CHUNK_OPTIONS);
    expect(out.every((c) => !('source_url' in c))).toBe(true);
  });

  it('copes with special-token text', () => {
    const out = chunkDocument(doc([{ type: 'paragraph', text: 'Do not choke on <|endoftext|> in user text.' }]), DEFAULT_CHUNK_OPTIONS);
    expect(children(out).map((c) => c.text)).toEqual(['Do not choke on <|endoftext|> in user text.']);
  });
});

// ------------------------------------------------------------------------------------ embedding text

describe('embeddingText', () => {
  it('prefixes one line of title and heading path', () => {
    expect(embeddingText({ title: 'Handbook', heading_path: ['Wings', 'Lift'], text: 'It rises.' })).toBe('Handbook > Wings > Lift\nIt rises.');
  });

  it('does not repeat a heading equal to the title and skips blanks', () => {
    expect(embeddingText({ title: 'Handbook', heading_path: ['handbook', ' ', 'Lift'], text: 't' })).toBe('Handbook > Lift\nt');
  });

  it('is just the text without title or headings', () => {
    expect(embeddingText({ title: '', heading_path: [], text: 'plain' })).toBe('plain');
  });

  it('caps the prefix line', () => {
    const out = embeddingText({ title: 'T'.repeat(1000), heading_path: ['H'], text: 'body' });
    const [prefix, body] = out.split('\n');
    expect(prefix!.length).toBeLessThanOrEqual(200);
    expect(prefix!.endsWith('…')).toBe(true);
    expect(body).toBe('body');
  });
});

describe('chunkDocumentWithin (chunks per document cap)', () => {
  const many = doc(englishSentences(400).map((text) => ({ type: 'paragraph' as const, text })));
  const opts: ChunkOptions = { chunkTokens: 32, overlapTokens: 0, parentTokens: 64 };

  it('returns the same chunks as chunkDocument at or under the cap', () => {
    const all = chunkDocument(many, opts);
    expect(all.length).toBeGreaterThan(100);
    expect(chunkDocumentWithin(many, opts, all.length)).toEqual({ ok: true, chunks: all });
  });

  it('is a too_many_chunks value over the cap (parents count)', () => {
    const all = chunkDocument(many, opts);
    expect(chunkDocumentWithin(many, opts, all.length - 1)).toEqual({
      ok: false,
      code: 'too_many_chunks',
      reason: `the document makes more than ${all.length - 1} chunks`,
    });
  });

  it('refuses a cap that is not a positive integer', () => {
    expect(() => chunkDocumentWithin(many, opts, 0)).toThrow(/maxChunks/);
  });
});
