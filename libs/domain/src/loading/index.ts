export {
  SUPPORTED_MIME_TYPES,
  DOCUMENT_MIME_TYPES,
  MIME_BY_EXTENSION,
  MIME_TEXT,
  MIME_MARKDOWN,
  MIME_HTML,
  MIME_PDF,
  MIME_DOCX,
  MIME_JSONL,
  type SupportedMimeType,
  type DocumentMimeType,
  detectMimeType,
  normalizeMimeType,
  isSupportedMimeType,
  isDocumentMimeType,
} from './mime';
export {
  loadContent,
  chooseTitle,
  truncateTitle,
  TITLE_MAX,
  DERIVED_TITLE_MAX,
  type LoadInput,
  type LoadResult,
  type LoadFailureCode,
  type TitleHints,
  type BinaryParser,
  type BinaryParsers,
  type BinaryParseResult,
} from './load';
export { parseJsonl, type JsonlDoc, type JsonlError, type JsonlParseResult } from './jsonl';
export { normalizeBody, contentHash, blocksToText } from './normalize';
export { parsePlainText, isCjk, joinLines } from './text';
export { parseMarkdown, type MarkdownParseResult } from './markdown';
export { parseHtml, decodeEntities, type HtmlParseResult } from './html';
export { isZip, zipEntries, ZIP_LOCAL_HEADER, type ZipEntry } from './zip';
export {
  DEFAULT_PARSE_LIMITS,
  PARSE_LIMIT_SETTING,
  formatBytes,
  utf8Length,
  tooLarge,
  textTooLarge,
  type LimitFailure,
  type ParseLimits,
  type ParseLimitName,
} from './limits';
