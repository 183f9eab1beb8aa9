import type { Block } from '@rag/contracts';
import mammoth from 'mammoth';
import { decodeEntities, parseHtml } from './html';
import { isZip, readZipEntry, zipEntries } from './zip';

export type DocxParseResult = { ok: true; blocks: Block[]; title?: string } | { ok: false; code: 'corrupt'; reason: string };

/** `dc:title` from `docProps/core.xml`, when the package has one. */
function coreTitle(bytes: Buffer, entries: ReturnType<typeof zipEntries>): string | undefined {
  const core = entries?.find((e) => e.name === 'docProps/core.xml');
  if (!core) return undefined;
  const xml = readZipEntry(bytes, core)?.toString('utf8');
  const m = xml ? /<dc:title(?:\s[^>]*)?>([\s\S]*?)<\/dc:title>/.exec(xml) : null;
  const title = m?.[1] ? decodeEntities(m[1]).replace(/\s+/g, ' ').trim() : '';
  return title || undefined;
}

/** DOCX → HTML with mammoth (headings, lists and tables survive) → blocks. */
export async function parseDocx(bytes: Buffer): Promise<DocxParseResult> {
  if (!isZip(bytes)) return { ok: false, code: 'corrupt', reason: 'not a DOCX file: it is not a ZIP package' };
  const entries = zipEntries(bytes);
  if (!entries) return { ok: false, code: 'corrupt', reason: 'the DOCX package is damaged or truncated (no readable ZIP central directory)' };
  if (!entries.some((e) => e.name === 'word/document.xml')) {
    return { ok: false, code: 'corrupt', reason: 'not a DOCX file: the package has no word/document.xml' };
  }
  let html: string;
  try {
    html = (await mammoth.convertToHtml({ buffer: bytes }, { ignoreEmptyParagraphs: true })).value;
  } catch (err) {
    return { ok: false, code: 'corrupt', reason: `the DOCX cannot be read (${err instanceof Error ? err.message : String(err)})` };
  }
  const { blocks } = parseHtml(html);
  const title = coreTitle(bytes, entries);
  return title ? { ok: true, blocks, title } : { ok: true, blocks };
}
