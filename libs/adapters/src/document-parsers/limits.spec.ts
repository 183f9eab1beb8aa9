import { DEFAULT_PARSE_LIMITS, utf8Length, type ParseLimits, MIME_DOCX, MIME_HTML, MIME_MARKDOWN, MIME_PDF, MIME_TEXT } from '@rag/domain';
import { loadDocument as loadContent } from './index';
import { findCoreTitle } from './docx';
import { buildDocx, paragraphsXml } from './testing/docx-fixture';
import { buildPdf } from './testing/pdf-fixture';

const limits = (over: Partial<ParseLimits>): ParseLimits => ({ ...DEFAULT_PARSE_LIMITS, ...over });

const CORE_HEAD =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">';

/** Sets the uncompressed size its ZIP central directory declares for `name` (a lying directory). */
function understateSize(zip: Buffer, name: string, size: number): Buffer {
  const out = Buffer.from(zip);
  for (let p = out.indexOf('PK\x01\x02'); p >= 0; p = out.indexOf('PK\x01\x02', p + 4)) {
    const nameLen = out.readUInt16LE(p + 28);
    if (out.toString('utf8', p + 46, p + 46 + nameLen) === name) {
      out.writeUInt32LE(size, p + 24);
      return out;
    }
  }
  throw new Error(`${name} not in the archive`);
}

describe('DOCX title from core.xml', () => {
  it('is read with a linear scan: the probe file (250k unclosed <dc:title>, 6 KB) loads at once, titled from elsewhere', async () => {
    // the lazy regex this replaces scanned to the end of core.xml from each of the 250k openings: 85 s on the probe
    const bytes = await buildDocx([{ kind: 'paragraph', text: 'Quarterly numbers are in the appendix.' }], {
      coreXml: `${CORE_HEAD}${'<dc:title>'.repeat(250_000)}</cp:coreProperties>`,
    });
    expect(bytes.length).toBeLessThan(20_000);
    const r = await loadContent({ bytes, mimeType: MIME_DOCX, filename: 'q3-report.docx' });
    expect(r).toMatchObject({ ok: true, title: 'q3-report', blocks: [{ type: 'paragraph', text: 'Quarterly numbers are in the appendix.' }] });
  });

  it('takes the first well-formed element and ignores broken ones', () => {
    expect(findCoreTitle(`${CORE_HEAD}<dc:title>Travel &amp; Expenses</dc:title>`)).toBe('Travel & Expenses');
    expect(findCoreTitle(`${CORE_HEAD}<dc:title xml:lang="en">\n  Spaced\n  Out </dc:title>`)).toBe('Spaced Out');
    expect(findCoreTitle(`${CORE_HEAD}<dc:titleX>no</dc:titleX><dc:title/><dc:title>Real</dc:title>`)).toBe('Real');
    expect(findCoreTitle(`${CORE_HEAD}<dc:title>${'<dc:title>'.repeat(1000)}x</dc:title>`)).toBeUndefined();
    expect(findCoreTitle(`${CORE_HEAD}${'<dc:title>'.repeat(1000)}`)).toBeUndefined();
    expect(findCoreTitle(`${CORE_HEAD}<dc:title>   </dc:title>`)).toBeUndefined();
  });
});

describe('DOCX inflated-bytes limit', () => {
  it('refuses a package whose XML inflates past the limit from its ZIP directory, before converting it', async () => {
    const bytes = await buildDocx([], { bodyXml: paragraphsXml(3 * 1024 * 1024) });
    expect(bytes.length).toBeLessThan(100_000); // a ~30× bomb
    const r = await loadContent({ bytes, mimeType: MIME_DOCX }, limits({ maxInflatedBytes: 1024 * 1024 }));
    expect(r).toEqual({
      ok: false,
      code: 'too_large',
      limit: 'inflated_bytes',
      reason: expect.stringMatching(/^the document inflates past 1 MiB of XML \(its ZIP directory declares 3(\.\d)? MiB\) \(RAG_MAX_INFLATED_BYTES\)$/),
    });
  });

  it('catches a ZIP directory that understates the size: the inflate stops at the limit', async () => {
    const honest = await buildDocx([], { bodyXml: paragraphsXml(3 * 1024 * 1024) });
    const lying = understateSize(honest, 'word/document.xml', 1000);
    const r = await loadContent({ bytes: lying, mimeType: MIME_DOCX }, limits({ maxInflatedBytes: 1024 * 1024 }));
    expect(r).toEqual({ ok: false, code: 'too_large', limit: 'inflated_bytes', reason: 'the document inflates past 1 MiB of XML (RAG_MAX_INFLATED_BYTES)' });
  });

  it('loads a package under the limit', async () => {
    const bytes = await buildDocx([], { bodyXml: paragraphsXml(200 * 1024) });
    const r = await loadContent({ bytes, mimeType: MIME_DOCX }, limits({ maxInflatedBytes: 1024 * 1024 }));
    expect(r.ok).toBe(true);
  });
});

describe('PDF limits', () => {
  it('refuses more pages than the limit before reading any page', async () => {
    const page = { paragraphs: [{ lines: ['One page of text.'] }] };
    const r = await loadContent({ bytes: buildPdf([page, page, page]), mimeType: MIME_PDF }, limits({ maxPages: 2 }));
    expect(r).toEqual({ ok: false, code: 'too_large', limit: 'pages', reason: 'the PDF has 3 pages, more than 2 (RAG_MAX_PAGES)' });
    expect((await loadContent({ bytes: buildPdf([page, page]), mimeType: MIME_PDF }, limits({ maxPages: 2 }))).ok).toBe(true);
  });

  it('stops extracting once the text passes the limit: a small PDF whose content stream inflates to 8 MB', async () => {
    const line = 'BT /F1 12 Tf 72 700 Td (Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.) Tj ET\n';
    const content = line.repeat(Math.ceil((8 * 1024 * 1024) / line.length));
    const bytes = buildPdf([{ content }], { compress: true });
    expect(bytes.length).toBeLessThan(200_000);
    const r = await loadContent({ bytes, mimeType: MIME_PDF }, limits({ maxTextBytes: 1024 * 1024 }));
    expect(r).toEqual({ ok: false, code: 'too_large', limit: 'text_bytes', reason: 'the document has more than 1 MiB of text (RAG_MAX_TEXT_BYTES)' });
  });

  it('counts the text of all pages together', async () => {
    const page = { paragraphs: [{ lines: Array.from({ length: 10 }, () => 'x'.repeat(60)) }] }; // 600 bytes a page
    const r = await loadContent({ bytes: buildPdf([page, page]), mimeType: MIME_PDF }, limits({ maxTextBytes: 1024 }));
    expect(r).toMatchObject({ ok: false, code: 'too_large', limit: 'text_bytes' });
    expect((await loadContent({ bytes: buildPdf([page]), mimeType: MIME_PDF }, limits({ maxTextBytes: 1024 }))).ok).toBe(true);
  });
});

describe('text limit for every format', () => {
  const big = 'word '.repeat(1000); // 5000 bytes
  it.each([
    [MIME_TEXT, big],
    [MIME_MARKDOWN, `# Title\n\n${big}`],
    [MIME_HTML, `<html><body><p>${big}</p></body></html>`],
  ])('%s over the text limit is too_large', async (mimeType, text) => {
    const r = await loadContent({ bytes: Buffer.from(text), mimeType }, limits({ maxTextBytes: 4096 }));
    expect(r).toEqual({ ok: false, code: 'too_large', limit: 'text_bytes', reason: 'the document has more than 4 KiB of text (RAG_MAX_TEXT_BYTES)' });
    expect((await loadContent({ bytes: Buffer.from(text), mimeType }, limits({ maxTextBytes: 8192 }))).ok).toBe(true);
  });

  it('DOCX text counts too (after conversion)', async () => {
    const bytes = await buildDocx([{ kind: 'paragraph', text: big }]);
    expect(await loadContent({ bytes, mimeType: MIME_DOCX }, limits({ maxTextBytes: 4096 }))).toMatchObject({ code: 'too_large', limit: 'text_bytes' });
  });

  it('measures UTF-8 bytes', () => {
    expect(utf8Length('aé中😀')).toBe(Buffer.byteLength('aé中😀', 'utf8'));
    expect(utf8Length('\ud800x')).toBe(Buffer.byteLength('\ud800x', 'utf8'));
  });
});
