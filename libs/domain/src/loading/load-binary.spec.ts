import { loadContent, type BinaryParsers } from './load';
import { MIME_DOCX, MIME_PDF } from './mime';

const pdfBytes = Buffer.from('%PDF-1.4\n%%EOF\n');

describe('loadContent and the binary parsers it is given', () => {
  it('answers unsupported_media_type for PDF and DOCX when no parser is wired, naming the type', async () => {
    expect(await loadContent({ bytes: pdfBytes, mimeType: MIME_PDF })).toEqual({
      ok: false,
      code: 'unsupported_media_type',
      reason: `no ${MIME_PDF} parser is wired in this process`,
    });
    expect(await loadContent({ bytes: Buffer.from('PK'), mimeType: MIME_DOCX })).toMatchObject({ ok: false, code: 'unsupported_media_type' });
  });

  it('hands PDF bytes and limits to the given parser and applies the title rules and text limit to what it returns', async () => {
    const seen: number[] = [];
    const binary: BinaryParsers = {
      [MIME_PDF]: async (bytes, limits) => {
        seen.push(bytes.length, limits.maxPages);
        return { ok: true, blocks: [{ type: 'paragraph', text: 'Body text.' }], title: 'Meta Title', pages: 3 };
      },
    };
    const limits = { maxInflatedBytes: 1, maxPages: 7, maxTextBytes: 1000 };
    expect(await loadContent({ bytes: pdfBytes, mimeType: MIME_PDF }, limits, binary)).toEqual({
      ok: true,
      title: 'Meta Title',
      blocks: [{ type: 'paragraph', text: 'Body text.' }],
      pages: 3,
    });
    expect(seen).toEqual([pdfBytes.length, 7]);
    expect(await loadContent({ bytes: pdfBytes, mimeType: MIME_PDF }, { ...limits, maxTextBytes: 4 }, binary)).toMatchObject({ ok: false, code: 'too_large', limit: 'text_bytes' });
  });
});
