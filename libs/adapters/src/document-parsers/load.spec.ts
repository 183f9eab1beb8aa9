import { chooseTitle, truncateTitle, detectMimeType, MIME_JSONL, MIME_TEXT, contentHash } from '@rag/domain';
import { loadDocument as loadContent } from './index';
import { BlockSchema, StructuredDocumentSchema } from '@rag/contracts';
import { buildDocx } from './testing/docx-fixture';
import { buildPdf } from './testing/pdf-fixture';

describe('plain text loading', () => {
  it('splits paragraphs on blank lines, joins wrapped lines, strips BOM/NUL and normalises CRLF', async () => {
    const text = '\ufeffFirst paragraph line one\r\nline two.\r\n\r\n  \r\nSecond\u0000 paragraph.\r\rThird, after old-Mac endings.\n\n- apples\n- pears\n\n1. one\n2) two\n';
    const r = await loadContent({ bytes: Buffer.from(text, 'utf8'), mimeType: 'text/plain; charset=utf-8', filename: 'notes.txt' });
    expect(r).toEqual({
      ok: true,
      title: 'notes',
      blocks: [
        { type: 'paragraph', text: 'First paragraph line one line two.' },
        { type: 'paragraph', text: 'Second paragraph.' },
        { type: 'paragraph', text: 'Third, after old-Mac endings.' },
        { type: 'list', ordered: false, items: ['apples', 'pears'] },
        { type: 'list', ordered: true, items: ['one', 'two'] },
      ],
    });
    if (r.ok) for (const b of r.blocks) expect(BlockSchema.safeParse(b).success).toBe(true);
  });

  it('uses the first line, truncated, when there is no heading, metadata or file name', async () => {
    const long = 'word '.repeat(100).trim();
    const r = await loadContent({ bytes: Buffer.from(`${long}\nmore text`), mimeType: MIME_TEXT });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.title.length).toBeLessThanOrEqual(200);
    expect(r.title.endsWith('word…')).toBe(true);
    const short = await loadContent({ bytes: Buffer.from('Hello there\nsecond line'), mimeType: MIME_TEXT });
    expect(short).toMatchObject({ ok: true, title: 'Hello there' });
  });

  it('a given title wins; a blank one is ignored', async () => {
    const bytes = Buffer.from('# not markdown here\n\nbody');
    expect(await loadContent({ bytes, mimeType: MIME_TEXT, title: '  My  Title ', filename: 'f.txt' })).toMatchObject({ title: 'My Title' });
    expect(await loadContent({ bytes, mimeType: MIME_TEXT, title: '   ', filename: 'f.txt' })).toMatchObject({ title: 'f' });
  });

  it('decodes UTF-16 with a BOM and falls back to Windows-1252 for invalid UTF-8', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Grüße aus Köln', 'utf16le')]);
    expect(await loadContent({ bytes: utf16, mimeType: MIME_TEXT })).toMatchObject({ ok: true, blocks: [{ type: 'paragraph', text: 'Grüße aus Köln' }] });
    const latin1 = Buffer.from('Caf\xe9 cr\xe8me', 'latin1');
    expect(await loadContent({ bytes: latin1, mimeType: MIME_TEXT })).toMatchObject({ ok: true, blocks: [{ type: 'paragraph', text: 'Café crème' }] });
  });

  it('empty and whitespace-only content is empty', async () => {
    for (const text of ['', '   \n\n\t  \r\n', '\u0000\u0000\n']) {
      expect(await loadContent({ bytes: Buffer.from(text), mimeType: MIME_TEXT })).toEqual({ ok: false, code: 'empty', reason: 'document has no text' });
    }
  });

  it('binary bytes declared as text are corrupt', async () => {
    const blob = Buffer.from(Array.from({ length: 2048 }, (_, i) => (i * 31 + 7) % 256));
    const r = await loadContent({ bytes: blob, mimeType: MIME_TEXT });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.code).toBe('corrupt');
    expect(r.reason).toMatch(/not text/);
  });
});

describe('unsupported media types', () => {
  it('are reported as values, never thrown', async () => {
    const r = await loadContent({ bytes: Buffer.from([0, 1, 2, 3]), mimeType: 'application/octet-stream' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.code).toBe('unsupported_media_type');
    expect(r.reason).toContain('application/octet-stream');
    expect(r.reason).toContain('application/pdf');
    expect(await loadContent({ bytes: Buffer.from('x'), mimeType: 'image/png' })).toMatchObject({ ok: false, code: 'unsupported_media_type' });
    expect(await loadContent({ bytes: Buffer.from('x'), mimeType: '' })).toMatchObject({ ok: false, code: 'unsupported_media_type' });
  });

  it('JSONL batches are pointed at parseJsonl', async () => {
    const r = await loadContent({ bytes: Buffer.from('{"_id":"1","text":"a"}'), mimeType: MIME_JSONL });
    expect(r).toMatchObject({ ok: false, code: 'unsupported_media_type' });
    if (!r.ok) expect(r.reason).toContain('parseJsonl');
  });
});

describe('titles', () => {
  it('follows given > heading > metadata > file name > first line', () => {
    const blocks = [
      { type: 'paragraph' as const, text: 'first line\nsecond' },
      { type: 'heading' as const, level: 2, text: 'Heading' },
    ];
    const hints = { given: 'Given', metadataTitle: 'Meta', filename: 'file.pdf', firstLine: 'Line hint' };
    expect(chooseTitle(blocks, hints)).toBe('Given');
    expect(chooseTitle(blocks, { ...hints, given: undefined })).toBe('Heading');
    expect(chooseTitle(blocks.slice(0, 1), { ...hints, given: undefined })).toBe('Meta');
    expect(chooseTitle(blocks.slice(0, 1), { filename: 'C:\\docs\\file.v2.pdf', firstLine: 'Line hint' })).toBe('file.v2');
    expect(chooseTitle(blocks.slice(0, 1), { firstLine: 'Line hint' })).toBe('Line hint');
    expect(chooseTitle(blocks.slice(0, 1))).toBe('first line');
    expect(chooseTitle([])).toBe('Untitled');
  });

  it('truncates at a word boundary', () => {
    expect(truncateTitle('alpha beta gamma delta', 12)).toBe('alpha beta…');
    expect(truncateTitle('短标题', 12)).toBe('短标题');
    expect(truncateTitle('一二三四五六七八九十一二三四', 10)).toBe('一二三四五六七八九…');
  });
});

describe('loader output', () => {
  it('fits StructuredDocument for every format (detected from name and bytes)', async () => {
    const inputs: { filename: string; bytes: Buffer }[] = [
      { filename: 'a.txt', bytes: Buffer.from('Hello\n\nWorld') },
      { filename: 'b.md', bytes: Buffer.from('# T\n\n- x\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```js\n1\n```') },
      { filename: 'c.html', bytes: Buffer.from('<h3>H</h3><table><tr><th>a</th><th>b</th></tr></table><pre>x</pre>') },
      { filename: 'd.pdf', bytes: buildPdf([{ paragraphs: [{ lines: ['P1'] }] }, { paragraphs: [{ lines: ['P2'] }] }]) },
      { filename: 'e.docx', bytes: await buildDocx([{ kind: 'heading', level: 2, text: 'D' }, { kind: 'table', rows: [['1', '2']] }]) },
    ];
    for (const { filename, bytes } of inputs) {
      const mime = detectMimeType(filename, bytes);
      expect(mime).not.toBeNull();
      const r = await loadContent({ bytes, mimeType: mime!, filename });
      expect(r.ok, filename).toBe(true);
      if (!r.ok) continue;
      const doc = {
        document_id: `upload:${filename}`,
        tenant: 'acme',
        version: 1,
        title: r.title,
        mime_type: mime,
        content_hash: contentHash(r.blocks),
        acl: ['*'],
        metadata: {},
        blocks: r.blocks,
        ...(r.pages !== undefined ? { pages: r.pages } : {}),
      };
      expect(StructuredDocumentSchema.safeParse(doc).success, filename).toBe(true);
    }
  });
});
