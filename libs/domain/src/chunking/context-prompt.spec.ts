import { describe, expect, it } from 'vitest';
import { embeddingText, keywordText } from './chunker';
import { cleanContext, contextDocumentText, contextPrompt, cutToTokens, MAX_CONTEXT_CHARS } from './context-prompt';
import { countTokens } from './tokens';

describe('contextual chunks: prompt', () => {
  it('puts the document first and the chunk last, so the chunks of a document share one prefix', () => {
    const a = contextPrompt('Report', 'The whole document.', 'chunk one')[0]!.content;
    const b = contextPrompt('Report', 'The whole document.', 'chunk two')[0]!.content;
    const cut = (s: string) => s.slice(0, s.indexOf('<chunk>'));
    expect(cut(a)).toBe(cut(b));
    expect(cut(a)).toBe('<document title="Report">\nThe whole document.\n</document>\nHere is the chunk we want to situate within the whole document\n');
    expect(a.endsWith('Answer only with the succinct context and nothing else.')).toBe(true);
  });

  it('gives the document as its parents when it has them, else its children, in ordinal order', () => {
    const chunks = [
      { kind: 'child' as const, ordinal: 2, text: 'c2' },
      { kind: 'parent' as const, ordinal: 1, text: 'P1' },
      { kind: 'parent' as const, ordinal: 0, text: 'P0' },
    ];
    expect(contextDocumentText(chunks, 100)).toBe('P0\n\nP1');
    expect(contextDocumentText([chunks[0]!, { kind: 'child', ordinal: 0, text: ' c0 ' }], 100)).toBe('c0\n\nc2');
  });

  it('cuts the document to the token budget, keeping the head', () => {
    const text = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    const cut = cutToTokens(text, 50);
    expect(cut.endsWith(' …')).toBe(true);
    expect(countTokens(cut.slice(0, -2))).toBeLessThanOrEqual(50);
    expect(text.startsWith(cut.slice(0, -2))).toBe(true);
    expect(cutToTokens('short text', 50)).toBe('short text');
  });
});

describe('contextual chunks: the stored context', () => {
  it('drops a label and markup, collapses whitespace, keeps two sentences', () => {
    expect(cleanContext('Context:  This chunk is from the 2023 report.\nIt covers wings. It also covers tails.', 'x')).toBe(
      'This chunk is from the 2023 report. It covers wings.',
    );
    expect(cleanContext('<context>"Part of the manual."</context>', 'x')).toBe('Part of the manual.');
    expect(cleanContext('本段出自年度报告。介绍了机翼。还有尾翼。', 'x')).toBe('本段出自年度报告。介绍了机翼。');
  });

  it('is null for nothing usable or an echo of the chunk', () => {
    expect(cleanContext('   ', 'x')).toBeNull();
    expect(cleanContext('...', 'x')).toBeNull();
    expect(cleanContext('The wing is swept.', 'The wing is swept. It has slats.')).toBeNull();
  });

  it('caps a context without sentence ends', () => {
    const c = cleanContext('a'.repeat(5000), 'x')!;
    expect(Array.from(c)).toHaveLength(MAX_CONTEXT_CHARS);
    expect(c.endsWith('…')).toBe(true);
  });

  it('goes between the heading line and the text for embedding, and into the BM25 text', () => {
    const chunk = { title: 'Manual', heading_path: ['Wings'], text: 'It has slats.', context: 'From the wing chapter.' };
    expect(embeddingText(chunk)).toBe('Manual > Wings\nFrom the wing chapter.\nIt has slats.');
    expect(embeddingText({ ...chunk, title: '', heading_path: [] })).toBe('From the wing chapter.\nIt has slats.');
    expect(embeddingText({ ...chunk, context: undefined })).toBe('Manual > Wings\nIt has slats.');
    expect(keywordText(chunk)).toBe('Manual\nWings\nFrom the wing chapter.\nIt has slats.');
    expect(keywordText({ ...chunk, context: undefined })).toBe('Manual\nWings\nIt has slats.');
  });
});
