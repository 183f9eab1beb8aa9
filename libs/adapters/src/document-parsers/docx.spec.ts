import { detectMimeType, MIME_DOCX } from '@rag/domain';
import { loadDocument as loadContent } from './index';
import JSZip from 'jszip';
import { buildDocx } from './testing/docx-fixture';

describe('DOCX loading', () => {
  it('keeps headings, paragraphs, lists and tables', async () => {
    const bytes = await buildDocx(
      [
        { kind: 'heading', level: 1, text: 'Travel Policy' },
        { kind: 'paragraph', text: 'Employees book travel through the portal & keep receipts.' },
        { kind: 'heading', level: 2, text: 'Allowances' },
        { kind: 'bullet', text: 'Hotels up to 150 EUR' },
        { kind: 'bullet', text: 'Meals up to 40 EUR' },
        { kind: 'table', headerRow: true, rows: [['City', 'Hotel cap'], ['Paris', '180'], ['Berlin', '150']] },
        { kind: 'paragraph', text: '差旅政策适用于全体员工。' },
      ],
      { title: 'Core Title' },
    );
    expect(detectMimeType('policy.docx', bytes)).toBe(MIME_DOCX);
    expect(detectMimeType(undefined, bytes)).toBe(MIME_DOCX);
    const r = await loadContent({ bytes, mimeType: MIME_DOCX, filename: 'policy.docx' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.title).toBe('Travel Policy');
    expect(r.pages).toBeUndefined();
    expect(r.blocks).toEqual([
      { type: 'heading', level: 1, text: 'Travel Policy' },
      { type: 'paragraph', text: 'Employees book travel through the portal & keep receipts.' },
      { type: 'heading', level: 2, text: 'Allowances' },
      { type: 'list', ordered: false, items: ['Hotels up to 150 EUR', 'Meals up to 40 EUR'] },
      { type: 'table', header: true, rows: [['City', 'Hotel cap'], ['Paris', '180'], ['Berlin', '150']] },
      { type: 'paragraph', text: '差旅政策适用于全体员工。' },
    ]);
  });

  it('a table without a marked header row is kept with header: false', async () => {
    const bytes = await buildDocx([{ kind: 'paragraph', text: 'Intro' }, { kind: 'table', rows: [['a', 'b'], ['c', 'd']] }]);
    const r = await loadContent({ bytes, mimeType: MIME_DOCX });
    expect(r.ok && r.blocks[1]).toEqual({ type: 'table', header: false, rows: [['a', 'b'], ['c', 'd']] });
  });

  it('takes the title from docProps/core.xml when there is no heading', async () => {
    const bytes = await buildDocx([{ kind: 'paragraph', text: 'Body only.' }], { title: 'Annual & Review' });
    const r = await loadContent({ bytes, mimeType: MIME_DOCX, filename: 'x.docx' });
    expect(r).toMatchObject({ ok: true, title: 'Annual & Review' });
  });

  it('reports a damaged package as corrupt', async () => {
    const good = await buildDocx([{ kind: 'paragraph', text: 'Hello' }]);
    const truncated = good.subarray(0, Math.floor(good.length / 2));
    const r1 = await loadContent({ bytes: truncated, mimeType: MIME_DOCX });
    expect(r1).toMatchObject({ ok: false, code: 'corrupt' });

    const garbage = Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(300, 0x41)]);
    const r2 = await loadContent({ bytes: garbage, mimeType: MIME_DOCX });
    expect(r2).toMatchObject({ ok: false, code: 'corrupt' });

    const notZip = await loadContent({ bytes: Buffer.from('plain words'), mimeType: MIME_DOCX });
    expect(notZip).toEqual({ ok: false, code: 'corrupt', reason: 'not a DOCX file: it is not a ZIP package' });
  });

  it('reports a ZIP without word/document.xml as corrupt, and does not detect it as DOCX by content', async () => {
    const zip = new JSZip();
    zip.file('hello.txt', 'hi');
    const bytes = await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
    expect(detectMimeType('archive.zip', bytes)).toBeNull();
    expect(detectMimeType('fake.docx', bytes)).toBe(MIME_DOCX);
    const r = await loadContent({ bytes, mimeType: MIME_DOCX });
    expect(r).toEqual({ ok: false, code: 'corrupt', reason: 'not a DOCX file: the package has no word/document.xml' });
  });

  it('reports a document with no text as empty', async () => {
    const bytes = await buildDocx([{ kind: 'paragraph', text: '   ' }]);
    expect(await loadContent({ bytes, mimeType: MIME_DOCX })).toEqual({ ok: false, code: 'empty', reason: 'document has no text' });
  });
});
