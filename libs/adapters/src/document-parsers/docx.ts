import type { Block } from '@rag/contracts';
import mammoth from 'mammoth';
import {
  decodeEntities,
  DEFAULT_PARSE_LIMITS,
  formatBytes,
  isZip,
  parseHtml,
  tooLarge,
  zipEntries,
  type LimitFailure,
  type ParseLimits,
  type ZipEntry,
} from '@rag/domain';
import { checkInflatedSize, readZipEntry } from './zip-entry';

export type DocxParseResult = { ok: true; blocks: Block[]; title?: string } | { ok: false; code: 'corrupt'; reason: string } | LimitFailure;

const OPEN = '<dc:title';
const CLOSE = '</dc:title>';

/**
 * The text of the first `<dc:title>…</dc:title>` element of core.xml, found with a linear scan (a lazy
 * `<dc:title>([\s\S]*?)</dc:title>` regex is quadratic: 250k unclosed `<dc:title>` in a 6 KB file held the server for
 * 85 s). A title holding markup or no closing tag is ignored (the title then comes from the content).
 */
export function findCoreTitle(xml: string): string | undefined {
  const close = xml.indexOf(CLOSE);
  if (close < 0) return undefined;
  for (let i = xml.indexOf(OPEN); i >= 0 && i < close; i = xml.indexOf(OPEN, i + OPEN.length)) {
    const next = xml[i + OPEN.length];
    if (next !== '>' && next !== '/' && !/\s/.test(next ?? '')) continue; // e.g. <dc:titleX>
    const gt = xml.indexOf('>', i);
    if (gt < 0 || gt > close) return undefined;
    if (xml[gt - 1] === '/') continue; // <dc:title/>
    const inner = xml.slice(gt + 1, close);
    if (inner.includes('<')) return undefined;
    const title = decodeEntities(inner).replace(/\s+/g, ' ').trim();
    return title || undefined;
  }
  return undefined;
}

/** `dc:title` from `docProps/core.xml`, when the package has one. */
function coreTitle(bytes: Buffer, entries: ZipEntry[]): string | undefined {
  const core = entries.find((e) => e.name === 'docProps/core.xml');
  if (!core) return undefined;
  const xml = readZipEntry(bytes, core)?.toString('utf8');
  return xml ? findCoreTitle(xml) : undefined;
}

/** The parts mammoth inflates and parses: XML and relationships. Media and embedded objects are never read. */
const isParsedPart = (e: ZipEntry): boolean => /\.(xml|rels)$/i.test(e.name);

/** DOCX → HTML with mammoth (headings, lists and tables survive) → blocks. */
export async function parseDocx(bytes: Buffer, limits: ParseLimits = DEFAULT_PARSE_LIMITS): Promise<DocxParseResult> {
  if (!isZip(bytes)) return { ok: false, code: 'corrupt', reason: 'not a DOCX file: it is not a ZIP package' };
  const entries = zipEntries(bytes);
  if (!entries) return { ok: false, code: 'corrupt', reason: 'the DOCX package is damaged or truncated (no readable ZIP central directory)' };
  if (!entries.some((e) => e.name === 'word/document.xml')) {
    return { ok: false, code: 'corrupt', reason: 'not a DOCX file: the package has no word/document.xml' };
  }
  const inflated = checkInflatedSize(bytes, entries, limits.maxInflatedBytes, isParsedPart);
  if (!inflated.ok) {
    const size = inflated.declared ? ` (its ZIP directory declares ${formatBytes(inflated.bytes)})` : '';
    return tooLarge('inflated_bytes', `the document inflates past ${formatBytes(limits.maxInflatedBytes)} of XML${size}`);
  }
  let html: string;
  try {
    html = (
      await mammoth.convertToHtml(
        { buffer: bytes },
        // images are not indexed: an empty src keeps mammoth from inflating and base64-encoding every one of them
        { ignoreEmptyParagraphs: true, convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: '' })) },
      )
    ).value;
  } catch (err) {
    return { ok: false, code: 'corrupt', reason: `the DOCX cannot be read (${err instanceof Error ? err.message : String(err)})` };
  }
  const { blocks } = parseHtml(html);
  const title = coreTitle(bytes, entries);
  return title ? { ok: true, blocks, title } : { ok: true, blocks };
}
