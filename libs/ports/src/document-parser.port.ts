import type { Block } from '@rag/contracts';

/** One document's bytes to parse into blocks. */
export interface ParseRequest {
  bytes: Uint8Array;
  /** Media type (parameters such as `; charset=utf-8` are ignored). */
  mimeType: string;
  /** Title chosen by the caller; wins over everything found in the content. */
  title?: string;
  /** Original file name, used for the title when the content has none. */
  filename?: string;
}

/**
 * Why a document could not be parsed. `too_large`: over a parse limit (inflated bytes, pages, text);
 * `timeout`: the parse ran past its time limit and was stopped; `out_of_memory`: it ran out of the parse memory limit.
 */
export type ParseFailureCode = 'unsupported_media_type' | 'corrupt' | 'empty' | 'too_large' | 'timeout' | 'out_of_memory';

/** Expected failures are values; `reason` names the limit's setting when a limit was hit. */
export type ParseOutcome =
  | { ok: true; title: string; blocks: Block[]; pages?: number }
  | { ok: false; code: ParseFailureCode; reason: string };

/**
 * Turns uploaded bytes (PDF, DOCX, HTML, Markdown, text) into structured blocks, within limits: an implementation
 * must bound the time, memory and output of one parse so that one document cannot stall the process that asked.
 * Unexpected faults (the parser itself cannot start) throw, so the bus retries and then dead-letters.
 */
export interface DocumentParser {
  parse(request: ParseRequest): Promise<ParseOutcome>;
  /** Stops the parser's workers; parses in flight reject. */
  close(): Promise<void>;
}

export const DOCUMENT_PARSER = Symbol('DOCUMENT_PARSER');
