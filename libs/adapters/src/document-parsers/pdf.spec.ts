import { MIME_PDF } from '@rag/domain';
import { loadDocument as loadContent } from './index';
import { itemsToLines, linesToParagraphs, paragraphsToBlocks } from './pdf';
import { buildPdf } from './testing/pdf-fixture';

const threePages = (): Buffer =>
  buildPdf(
    [
      {
        paragraphs: [
          { lines: ['Quarterly Report'], size: 20 },
          { lines: ['Revenue grew in every region during the', 'third quarter, led by the northern office.'] },
          { lines: ['Costs were flat (see appendix).'] },
        ],
      },
      { paragraphs: [{ lines: ['Page two starts a new section about hiring.'] }] },
      {
        paragraphs: [
          { lines: ['Outlook'], size: 16 },
          { lines: ['The final page closes the report.'] },
        ],
      },
    ],
    { title: 'Q3 Report (metadata)' },
  );

describe('PDF loading', () => {
  it('extracts every page in order, rebuilding lines, paragraphs and headings', async () => {
    const r = await loadContent({ bytes: threePages(), mimeType: MIME_PDF, filename: 'q3.pdf' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.pages).toBe(3);
    expect(r.title).toBe('Quarterly Report');
    expect(r.blocks).toEqual([
      { type: 'heading', level: 1, text: 'Quarterly Report' },
      { type: 'paragraph', text: 'Revenue grew in every region during the third quarter, led by the northern office.' },
      { type: 'paragraph', text: 'Costs were flat (see appendix).' },
      { type: 'paragraph', text: 'Page two starts a new section about hiring.' },
      { type: 'heading', level: 2, text: 'Outlook' },
      { type: 'paragraph', text: 'The final page closes the report.' },
    ]);
  });

  it('uses the /Title metadata when there is no heading, and joins a paragraph cut by a page break', async () => {
    const pdf = buildPdf(
      [
        { paragraphs: [{ lines: ['Alpha line one of a long sentence that'] }, { lines: ['Second paragraph on page one.'] }, { lines: ['This paragraph continues on the'] }] },
        { paragraphs: [{ lines: ['next page without a break.'] }, { lines: ['7'] }] },
      ],
      { title: 'Metadata Title' },
    );
    const r = await loadContent({ bytes: pdf, mimeType: 'application/pdf' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.title).toBe('Metadata Title');
    expect(r.pages).toBe(2);
    expect(r.blocks.map((b) => (b.type === 'paragraph' ? b.text : ''))).toEqual([
      'Alpha line one of a long sentence that',
      'Second paragraph on page one.',
      'This paragraph continues on the next page without a break.',
    ]);
  });

  it('falls back to the file name for the title when there is neither heading nor metadata', async () => {
    const pdf = buildPdf([{ paragraphs: [{ lines: ['Just one line of body text.'] }] }]);
    const r = await loadContent({ bytes: pdf, mimeType: MIME_PDF, filename: 'uploads/Board Minutes.pdf' });
    expect(r).toMatchObject({ ok: true, title: 'Board Minutes', pages: 1 });
  });

  it('reports a PDF without a text layer as empty (needs OCR)', async () => {
    const pdf = buildPdf([{ content: '0 0 1 rg 72 72 200 300 re f' }, { content: '0.5 g 10 10 m 300 300 l S' }], { noFont: true });
    const r = await loadContent({ bytes: pdf, mimeType: MIME_PDF });
    expect(r).toEqual({ ok: false, code: 'empty', reason: 'the PDF has no extractable text (scanned images need OCR)' });
  });

  it('reports random bytes after a %PDF header as corrupt', async () => {
    let seed = 42;
    const noise = Buffer.from(Array.from({ length: 4096 }, () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % 256)));
    const r = await loadContent({ bytes: Buffer.concat([Buffer.from('%PDF-1.4\n'), noise, Buffer.from('\n%%EOF\n')]), mimeType: MIME_PDF });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.code).toBe('corrupt');
    expect(r.reason).toMatch(/cannot be parsed/);
  });

  it('reports a truncated PDF as corrupt, wherever it is cut', async () => {
    const pdf = threePages();
    for (const fraction of [0.2, 0.5, 0.8, 0.99]) {
      const r = await loadContent({ bytes: pdf.subarray(0, Math.floor(pdf.length * fraction)), mimeType: MIME_PDF });
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.code).toBe('corrupt');
      expect(r.reason).toMatch(/truncated/);
    }
  });

  it('reports bytes without a %PDF header as corrupt', async () => {
    const r = await loadContent({ bytes: Buffer.from('hello, I am not a PDF'), mimeType: MIME_PDF });
    expect(r).toEqual({ ok: false, code: 'corrupt', reason: 'not a PDF file: the %PDF- header is missing' });
  });

  it('prints nothing to stdout while parsing good or bad PDFs', async () => {
    const writes: string[] = [];
    const original = process.stdout.write.bind(process.stdout);
    const logs: unknown[] = [];
    const originalLog = console.log;
    process.stdout.write = ((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    console.log = (...args: unknown[]) => void logs.push(args);
    try {
      await loadContent({ bytes: threePages(), mimeType: MIME_PDF });
      await loadContent({ bytes: Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(500, 7), Buffer.from('%%EOF')]), mimeType: MIME_PDF });
    } finally {
      process.stdout.write = original;
      console.log = originalLog;
    }
    expect(writes).toEqual([]);
    expect(logs).toEqual([]);
  });

  it('decodes Chinese text set in a non-embedded CID font (pdf.js CMaps are found)', async () => {
    const pdf = buildPdf([
      {
        paragraphs: [
          { lines: ['检索增强生成'], size: 18, font: 'cjk' },
          { lines: ['企业知识库支持中文文档，', '并按段落切分。'], font: 'cjk' },
          { lines: ['Mixed English line.'] },
        ],
      },
    ]);
    const r = await loadContent({ bytes: pdf, mimeType: MIME_PDF });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.title).toBe('检索增强生成');
    expect(r.blocks).toEqual([
      { type: 'heading', level: 1, text: '检索增强生成' },
      { type: 'paragraph', text: '企业知识库支持中文文档，并按段落切分。' },
      { type: 'paragraph', text: 'Mixed English line.' },
    ]);
  });

  it('parses many pages (all of them, not just the first)', async () => {
    const pages = Array.from({ length: 12 }, (_, i) => ({ paragraphs: [{ lines: [`Body of page number ${i + 1}.`] }] }));
    const r = await loadContent({ bytes: buildPdf(pages), mimeType: MIME_PDF });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.pages).toBe(12);
    expect(r.blocks.map((b) => (b.type === 'paragraph' ? b.text : ''))).toEqual(pages.map((_, i) => `Body of page number ${i + 1}.`));
  });
});

describe('PDF layout reconstruction', () => {
  const item = (str: string, x: number, y: number, width: number, hasEOL = false, size = 10) => ({
    str,
    transform: [size, 0, 0, size, x, y],
    width,
    height: size,
    hasEOL,
  });

  it('joins runs on one baseline, adding a space only across a visible gap', () => {
    const lines = itemsToLines([
      item('Hel', 0, 100, 15),
      item('lo', 15, 100, 10),
      item('world', 30, 100.5, 25),
      { type: 'beginMarkedContent', id: 'x' },
      item('next', 0, 88, 20, true),
      item('', 0, 76, 0, true),
      item('中文', 0, 76, 20),
      item('文本', 20, 76, 20),
    ]);
    expect(lines.map((l) => l.text)).toEqual(['Hello world', 'next', '中文文本']);
  });

  it('splits paragraphs on larger gaps, de-hyphenates and drops lone page numbers', () => {
    const lines = itemsToLines([
      item('A long para-', 0, 700, 60, true),
      item('graph goes on', 0, 688, 60, true),
      item('New paragraph', 0, 664, 60, true),
      item('12', 300, 40, 10),
    ]);
    const blocks = paragraphsToBlocks(linesToParagraphs(lines, 1));
    expect(blocks).toEqual([
      { type: 'paragraph', text: 'A long paragraph goes on' },
      { type: 'paragraph', text: 'New paragraph' },
    ]);
  });
});
