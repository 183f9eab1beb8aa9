import type { Block } from '@rag/contracts';
import { blocksToText, contentHash, normalizeBody } from './normalize';

const blocks: Block[] = [
  { type: 'heading', level: 1, text: 'Title' },
  { type: 'paragraph', text: 'Some   text\nover  lines.' },
  { type: 'list', ordered: true, items: ['one', 'two'] },
  { type: 'table', header: true, caption: 'Costs', rows: [['Plan', 'Cost'], ['Basic', 'a|b']] },
  { type: 'code', language: 'ts', text: 'const x = 1;\n  return x;' },
];

describe('normalizeBody / contentHash', () => {
  it('renders a canonical text with whitespace collapsed', () => {
    expect(normalizeBody(blocks)).toBe(
      ['Title', 'Some text over lines.', 'one', 'two', 'Costs', 'Plan | Cost', 'Basic | a|b', 'const x = 1; return x;'].join('\n'),
    );
  });

  it('hashes to sha256 hex, stable across whitespace-only differences', () => {
    const h = contentHash(blocks);
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    const respaced: Block[] = blocks.map((b) => (b.type === 'paragraph' ? { ...b, text: ' Some text over\tlines. ' } : b));
    expect(contentHash(respaced)).toBe(h);
    expect(contentHash([...blocks, { type: 'paragraph', text: 'new' }])).not.toBe(h);
    expect(contentHash([])).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});

describe('blocksToText', () => {
  it('renders Markdown-like text', () => {
    expect(blocksToText(blocks)).toBe(
      [
        '# Title',
        'Some   text\nover  lines.',
        '1. one\n2. two',
        'Costs\n| Plan | Cost |\n| --- | --- |\n| Basic | a\\|b |',
        '```ts\nconst x = 1;\n  return x;\n```',
      ].join('\n\n'),
    );
    expect(blocksToText([{ type: 'list', ordered: false, items: ['a'] }, { type: 'code', text: 'x' }])).toBe('- a\n\n```\nx\n```');
  });
});
