import {
  detectMimeType,
  DOCUMENT_MIME_TYPES,
  MIME_DOCX,
  MIME_HTML,
  MIME_JSONL,
  MIME_MARKDOWN,
  MIME_PDF,
  MIME_TEXT,
  normalizeMimeType,
  SUPPORTED_MIME_TYPES,
} from './mime';

describe('media types', () => {
  it('lists the supported types', () => {
    expect([...SUPPORTED_MIME_TYPES].sort()).toEqual([MIME_DOCX, MIME_PDF, MIME_JSONL, MIME_HTML, MIME_MARKDOWN, MIME_TEXT].sort());
    expect(DOCUMENT_MIME_TYPES).not.toContain(MIME_JSONL);
  });

  it('normalises declared types', () => {
    expect(normalizeMimeType('Text/HTML; charset=UTF-8')).toBe(MIME_HTML);
    expect(normalizeMimeType('text/x-markdown')).toBe(MIME_MARKDOWN);
    expect(normalizeMimeType('application/jsonl')).toBe(MIME_JSONL);
    expect(normalizeMimeType('  ')).toBeNull();
    expect(normalizeMimeType(undefined)).toBeNull();
  });

  it('detects by extension', () => {
    const text = Buffer.from('hello');
    expect(detectMimeType('a.txt', text)).toBe(MIME_TEXT);
    expect(detectMimeType('README.MD', text)).toBe(MIME_MARKDOWN);
    expect(detectMimeType('notes.markdown', text)).toBe(MIME_MARKDOWN);
    expect(detectMimeType('page.htm', text)).toBe(MIME_HTML);
    expect(detectMimeType('page.html', text)).toBe(MIME_HTML);
    expect(detectMimeType('corpus.jsonl', text)).toBe(MIME_JSONL);
    // a name that claims a binary format is kept, so that loading reports the file as corrupt
    expect(detectMimeType('broken.pdf', text)).toBe(MIME_PDF);
    expect(detectMimeType('broken.docx', text)).toBe(MIME_DOCX);
  });

  it('detects by magic bytes, whatever the name or declared type says', () => {
    // the `%PDF-` header is what detection reads; a real PDF is parsed in libs/adapters/src/document-parsers
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n');
    expect(detectMimeType(undefined, pdf)).toBe(MIME_PDF);
    expect(detectMimeType('upload.bin', pdf, 'application/octet-stream')).toBe(MIME_PDF);
    expect(detectMimeType('mislabelled.txt', pdf, 'text/plain')).toBe(MIME_PDF);
  });

  it('uses the declared type when the name says nothing', () => {
    const text = Buffer.from('<p>hi</p>');
    expect(detectMimeType(undefined, text, 'text/html; charset=utf-8')).toBe(MIME_HTML);
    expect(detectMimeType('README', text, 'text/markdown')).toBe(MIME_MARKDOWN);
    expect(detectMimeType(undefined, Buffer.from('a,b\n1,2'), 'text/csv')).toBe(MIME_TEXT);
    expect(detectMimeType(undefined, text, 'application/json')).toBeNull();
    expect(detectMimeType('photo.png', text, 'image/png')).toBeNull();
  });

  it('sniffs undeclared content: HTML, text, or nothing for binary', () => {
    expect(detectMimeType(undefined, Buffer.from('\ufeff  <!DOCTYPE html><html><body>x</body></html>'))).toBe(MIME_HTML);
    expect(detectMimeType(undefined, Buffer.from('just some words'))).toBe(MIME_TEXT);
    expect(detectMimeType('data', Buffer.from('just some words'), 'application/octet-stream')).toBe(MIME_TEXT);
    const blob = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 131 + 3) % 256));
    expect(detectMimeType(undefined, blob)).toBeNull();
    expect(detectMimeType('blob.bin', blob, 'application/octet-stream')).toBeNull();
    expect(detectMimeType(undefined, Buffer.alloc(0))).toBeNull();
    const nonUtf8 = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 1, 0, 0, 0, 1, 0]);
    expect(detectMimeType(undefined, nonUtf8)).toBeNull();
  });
});
