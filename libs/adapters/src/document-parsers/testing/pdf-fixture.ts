import { deflateSync } from 'node:zlib';

/**
 * Test-only helper: writes small but real PDF files by hand (uncompressed content streams unless `compress`, standard
 * Helvetica, a correct cross-reference table), so loader tests parse genuine PDFs without binary fixtures.
 */

export interface PdfParagraph {
  /** Lines of the paragraph, top to bottom (Latin-1 text). */
  lines: string[];
  /** Font size in points (default 12). */
  size?: number;
  /** `cjk`: set in the non-embedded STSong-Light CID font (UniGB-UCS2-H), so Chinese text works. */
  font?: 'helvetica' | 'cjk';
}

export interface PdfPage {
  paragraphs?: PdfParagraph[];
  /** Raw content stream used instead of `paragraphs` (e.g. graphics only, for an image-like page). */
  content?: string;
}

export interface PdfOptions {
  /** Document information dictionary `/Title`. */
  title?: string;
  /** Omit the `/Font` resource (only useful together with `content`). */
  noFont?: boolean;
  /** Compress the content streams (`/FlateDecode`), as real PDFs do; a large repetitive stream becomes an inflation bomb. */
  compress?: boolean;
}

const PAGE_WIDTH = 612;
const PAGE_HEIGHT = 792;
const MARGIN = 72;

function pdfString(text: string): string {
  return `(${text.replace(/\\/g, '\\\\').replace(/\(/g, '\\(').replace(/\)/g, '\\)')})`;
}

/** Lays out paragraphs top-down: line spacing 1.2 × size, one blank line between paragraphs. */
export function pageContent(paragraphs: PdfParagraph[]): string {
  const ops: string[] = [];
  let y = PAGE_HEIGHT - MARGIN;
  paragraphs.forEach((para, i) => {
    const size = para.size ?? 12;
    if (i > 0) y -= size * 1.2; // the blank line separating paragraphs
    for (const line of para.lines) {
      const text = para.font === 'cjk' ? `<${Buffer.from(line, 'utf16le').swap16().toString('hex')}>` : pdfString(line);
      ops.push(`BT /${para.font === 'cjk' ? 'F2' : 'F1'} ${size} Tf 1 0 0 1 ${MARGIN} ${y.toFixed(2)} Tm ${text} Tj ET`);
      y -= size * 1.2;
    }
  });
  return ops.join('\n');
}

/** Builds a complete PDF (header, objects, xref with exact byte offsets, trailer, %%EOF). */
export function buildPdf(pages: PdfPage[], opts: PdfOptions = {}): Buffer {
  // Object numbers: 1 catalog, 2 page tree, 3 Helvetica, 4-5 the CID font, then (page, content) pairs, then info.
  const objects: string[] = [];
  const pageIds = pages.map((_, i) => 6 + i * 2);
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`;
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>';
  objects[4] = '<< /Type /Font /Subtype /Type0 /BaseFont /STSong-Light /Encoding /UniGB-UCS2-H /DescendantFonts [5 0 R] >>';
  objects[5] =
    '<< /Type /Font /Subtype /CIDFontType0 /BaseFont /STSong-Light /CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 4 >> /DW 1000 ' +
    '/FontDescriptor << /Type /FontDescriptor /FontName /STSong-Light /Flags 6 /FontBBox [-25 -254 1000 880] ' +
    '/ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 880 /StemV 93 >> >>';
  pages.forEach((page, i) => {
    const pageId = pageIds[i]!;
    const content = page.content ?? pageContent(page.paragraphs ?? []);
    const resources = opts.noFont ? '<< >>' : '<< /Font << /F1 3 0 R /F2 4 0 R >> >>';
    objects[pageId] =
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${PAGE_WIDTH} ${PAGE_HEIGHT}] /Resources ${resources} /Contents ${pageId + 1} 0 R >>`;
    const data = opts.compress ? deflateSync(Buffer.from(content, 'latin1')).toString('latin1') : content;
    objects[pageId + 1] = `<< /Length ${Buffer.byteLength(data, 'latin1')}${opts.compress ? ' /Filter /FlateDecode' : ''} >>\nstream\n${data}\nendstream`;
  });
  let infoId: number | undefined;
  if (opts.title !== undefined) {
    infoId = objects.length;
    objects[infoId] = `<< /Title ${pdfString(opts.title)} /Producer (rag test fixture) >>`;
  }

  let out = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets: number[] = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = Buffer.byteLength(out, 'latin1');
    out += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xrefOffset = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) out += `${String(offsets[id]).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length} /Root 1 0 R${infoId ? ` /Info ${infoId} 0 R` : ''} >>\n`;
  out += `startxref\n${xrefOffset}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
