import { loadContent } from './load';
import { parseMarkdown } from './markdown';
import { MIME_MARKDOWN } from './mime';

const md = `---
title: "Front Matter Title"
tags: [a, b]
---
# 产品手册 Product Guide

Intro paragraph with **bold**, a [link](https://example.com), \`inline code\` and &amp; entity.
Second line of the same paragraph.

## 安装步骤

检索增强生成（RAG）将检索与生成结合。
它支持中文。

1. Download the package
2. Run the installer
   - nested *note*
- [x] done task

| 参数 | 默认值 | 说明 |
|------|--------|------|
| top_k | 10 | 返回的片段数 |
| mode | hybrid | a \\| pipe |

\`\`\`python title="demo.py"
def hello():
    return "你好"
\`\`\`

> Quoted advice
> over two lines.

<div class="note"><p>Raw <b>HTML</b> block</p><script>alert(1)</script></div>

    indented code block

***
`;

describe('Markdown loading', () => {
  it('maps tokens to headings, paragraphs, lists, tables and code', () => {
    const { blocks, title } = parseMarkdown(md);
    expect(title).toBe('Front Matter Title');
    expect(blocks).toEqual([
      { type: 'heading', level: 1, text: '产品手册 Product Guide' },
      {
        type: 'paragraph',
        text: 'Intro paragraph with bold, a link, inline code and & entity. Second line of the same paragraph.',
      },
      { type: 'heading', level: 2, text: '安装步骤' },
      { type: 'paragraph', text: '检索增强生成（RAG）将检索与生成结合。它支持中文。' },
      { type: 'list', ordered: true, items: ['Download the package', 'Run the installer', 'nested note'] },
      { type: 'list', ordered: false, items: ['[x] done task'] },
      {
        type: 'table',
        header: true,
        rows: [
          ['参数', '默认值', '说明'],
          ['top_k', '10', '返回的片段数'],
          ['mode', 'hybrid', 'a | pipe'],
        ],
      },
      { type: 'code', language: 'python', text: 'def hello():\n    return "你好"' },
      { type: 'paragraph', text: 'Quoted advice over two lines.' },
      { type: 'paragraph', text: 'Raw HTML block' },
      { type: 'code', text: 'indented code block' },
    ]);
  });

  it('loads through loadContent; the first heading wins over the front-matter title', async () => {
    const r = await loadContent({ bytes: Buffer.from(md, 'utf8'), mimeType: 'text/markdown; charset=utf-8' });
    expect(r).toMatchObject({ ok: true, title: '产品手册 Product Guide' });
    const noHeading = await loadContent({ bytes: Buffer.from('---\ntitle: FM\n---\nJust text.\n'), mimeType: MIME_MARKDOWN });
    expect(noHeading).toMatchObject({ ok: true, title: 'FM', blocks: [{ type: 'paragraph', text: 'Just text.' }] });
  });

  it('keeps hard line breaks and setext headings', () => {
    const { blocks } = parseMarkdown('Title\n=====\n\nline one  \nline two\n\nSub\n---\n');
    expect(blocks).toEqual([
      { type: 'heading', level: 1, text: 'Title' },
      { type: 'paragraph', text: 'line one\nline two' },
      { type: 'heading', level: 2, text: 'Sub' },
    ]);
  });

  it('markdown with only markup and no text is empty', async () => {
    const r = await loadContent({ bytes: Buffer.from('\n\n---\n\n<!-- comment -->\n\n'), mimeType: MIME_MARKDOWN });
    expect(r).toEqual({ ok: false, code: 'empty', reason: 'document has no text' });
  });
});
