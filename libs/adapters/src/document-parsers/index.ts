import { DEFAULT_PARSE_LIMITS, loadContent, MIME_DOCX, MIME_PDF, type BinaryParsers, type LoadInput, type LoadResult, type ParseLimits } from '@rag/domain';
import { parseDocx } from './docx';
import { parsePdf } from './pdf';

export { parseDocx, findCoreTitle, type DocxParseResult } from './docx';
export { parsePdf, type PdfParseResult } from './pdf';
export { checkInflatedSize, readZipEntry, type InflatedSizeCheck } from './zip-entry';

/**
 * The binary-format parsers (pdf.js, mammoth, zlib): kept out of libs/domain, which holds no SDK or Node built-in,
 * and handed to the domain's `loadContent`.
 */
export const BINARY_PARSERS: Readonly<BinaryParsers> = Object.freeze({ [MIME_PDF]: parsePdf, [MIME_DOCX]: parseDocx });

/** `loadContent` with every format this platform reads, PDF and DOCX included. */
export function loadDocument(input: LoadInput, limits: ParseLimits = DEFAULT_PARSE_LIMITS): Promise<LoadResult> {
  return loadContent(input, limits, BINARY_PARSERS);
}
