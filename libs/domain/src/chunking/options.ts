/** Sizes for `chunkDocument`, all in `cl100k_base` tokens (see `countTokens`). */
export interface ChunkOptions {
  /** Target size of a child (searched) chunk. */
  chunkTokens: number;
  /** About this many tokens of a chunk's tail start the next chunk of the same section; `< chunkTokens`. */
  overlapTokens: number;
  /** Size of the parents handed to the generator; 0 = no parent-child (children only). */
  parentTokens: number;
}

/**
 * 200-token children embed well with small bi-encoders (which cut at 256–512 of their own tokens) and
 * keep a hit precise; a 30-token overlap (15 %) carries about one sentence across a cut; 800-token
 * parents give the generator a few paragraphs of context per hit.
 */
export const DEFAULT_CHUNK_OPTIONS: Readonly<ChunkOptions> = Object.freeze({
  chunkTokens: 200,
  overlapTokens: 30,
  parentTokens: 800,
});

/**
 * Tables and code blocks stay whole up to this many times `chunkTokens`: cutting them costs more
 * meaning than a larger chunk does. Larger ones are split (tables by rows, code by lines) into pieces
 * of about `chunkTokens`.
 */
export const ATOMIC_FACTOR = 2;

/** Throws a configuration error unless the options are usable. */
export function validateChunkOptions(opts: ChunkOptions): void {
  const problems: string[] = [];
  const { chunkTokens, overlapTokens, parentTokens } = opts;
  if (!Number.isInteger(chunkTokens) || chunkTokens <= 0) problems.push(`chunkTokens must be a positive integer (got ${chunkTokens})`);
  if (!Number.isInteger(overlapTokens) || overlapTokens < 0) problems.push(`overlapTokens must be a non-negative integer (got ${overlapTokens})`);
  else if (Number.isInteger(chunkTokens) && overlapTokens >= chunkTokens) {
    problems.push(`overlapTokens (${overlapTokens}) must be smaller than chunkTokens (${chunkTokens})`);
  }
  if (!Number.isInteger(parentTokens) || parentTokens < 0) problems.push(`parentTokens must be 0 or a positive integer (got ${parentTokens})`);
  else if (parentTokens > 0 && Number.isInteger(chunkTokens) && parentTokens < chunkTokens) {
    problems.push(`parentTokens (${parentTokens}) must be 0 (no parents) or at least chunkTokens (${chunkTokens})`);
  }
  if (problems.length > 0) throw new Error(`invalid chunk options: ${problems.join('; ')}`);
}

/**
 * Default cap on the chunks of one document (RAG_MAX_CHUNKS_PER_DOCUMENT): 8 MiB of text (the default text cap) makes
 * ~12k chunks at the default sizes, so the cap binds when the chunk sizes are configured smaller; every chunk carries
 * the document's metadata, so the cap also bounds what one document costs the stores.
 */
export const DEFAULT_MAX_CHUNKS_PER_DOCUMENT = 20_000;
