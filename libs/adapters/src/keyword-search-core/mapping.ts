/**
 * Index layout shared by the Elasticsearch 8 and OpenSearch 2.x keyword indexes.
 *
 * Physical indexes are versioned (`${prefix}-v1`, `${prefix}-v2`, …) and never addressed directly: writes go through
 * the write alias `${prefix}-write`, reads through the read alias `${prefix}-read`, so a reindex into a new physical
 * index (new analysis, new BM25 parameters, more shards) is swapped in atomically (see `aliases.ts`).
 *
 * Fields:
 * - `chunk_id`, `document_id`, `tenant`, `acl`, `kind`, `parent_id`: keyword; `version`: long;
 * - `text`: the chunk's title, heading path and text, analysed with the `standard` analyzer;
 * - `text_seg`: the same text pre-segmented by `segmentForIndex()` from `@rag/domain` (the tokenizer of the embedded
 *   BM25 index: ICU word segmentation for Chinese/Japanese, lower-casing, English stop words and light stemming),
 *   indexed with the `whitespace` analyzer, so a query behaves exactly as in embedded mode;
 * - both text fields use the custom similarity `rag_bm25` (Lucene BM25, k1/b configurable, defaults 0.9/0.4 like
 *   the embedded index). Similarity is a static index setting: changing k1/b means a reindex into a new version;
 * - metadata as typed dynamic sub-fields, one object per JSON type, because filters need exact typed semantics that
 *   neither `flattened` (ES) nor `flat_object` (OpenSearch) offers (both index every leaf as a keyword, so numeric
 *   ranges would compare strings and `"5"` would equal `5`):
 *     `md_s.<key>` keyword (string values), `md_a.<key>` keyword (elements of string[] values),
 *     `md_n.<key>` double (numbers), `md_b.<key>` boolean;
 *   keys are encoded by {@link encodeFieldKey} so a dot in a metadata key cannot create an object path;
 * - `chunk`: the full `Chunk` JSON, kept in `_source` only (`enabled: false`: not parsed, not indexed) for
 *   `getChunks()`.
 *
 * Parents (`kind: parent`) are stored without `text`/`text_seg`, so they never match and never enter the BM25
 * statistics (document count, average length), exactly like the embedded index.
 */

export const SIMILARITY_NAME = 'rag_bm25';

/** Sub-objects holding metadata values by type. */
export const METADATA_OBJECTS = { string: 'md_s', array: 'md_a', number: 'md_n', boolean: 'md_b' } as const;

export interface IndexNames {
  prefix: string;
  readAlias: string;
  writeAlias: string;
  /** Physical index of a layout version. */
  physical(version: number): string;
  /** The version of a physical index name, or null when it is not one of ours. */
  versionOf(index: string): number | null;
}

/** Index/alias names for a prefix (RAG_KEYWORD_INDEX_PREFIX, default `rag-chunks`). */
export function indexNames(prefix: string): IndexNames {
  if (!/^[a-z0-9][a-z0-9._-]{0,199}$/.test(prefix) || prefix === '.' || prefix === '..') {
    throw new Error(`keyword index prefix "${prefix}" must be lowercase [a-z0-9._-], start with a letter or digit, at most 200 characters`);
  }
  const re = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}-v(\\d+)$`);
  return {
    prefix,
    readAlias: `${prefix}-read`,
    writeAlias: `${prefix}-write`,
    physical: (version: number) => {
      if (!Number.isInteger(version) || version < 1) throw new Error(`index version must be a positive integer, got ${version}`);
      return `${prefix}-v${version}`;
    },
    versionOf: (index: string) => {
      const m = re.exec(index);
      return m ? Number(m[1]) : null;
    },
  };
}

/**
 * Encodes a metadata key as one field-name segment: `[A-Za-z0-9_-]` stay as they are, every other UTF-16 code unit
 * (including `.`, `~` and spaces) becomes `~` + 4 hex digits. Injective, and never contains a dot.
 */
export function encodeFieldKey(key: string): string {
  let out = '';
  for (let i = 0; i < key.length; i++) {
    const ch = key[i]!;
    out += /[A-Za-z0-9_-]/.test(ch) ? ch : `~${key.charCodeAt(i).toString(16).padStart(4, '0')}`;
  }
  return out;
}

export function decodeFieldKey(encoded: string): string {
  return encoded.replace(/~([0-9a-f]{4})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

export type MetadataKind = keyof typeof METADATA_OBJECTS;

export function metadataField(kind: MetadataKind, key: string): string {
  return `${METADATA_OBJECTS[kind]}.${encodeFieldKey(key)}`;
}

export interface IndexLayoutOptions {
  /** BM25 term-frequency saturation (default 0.9). */
  k1?: number;
  /** BM25 length normalisation (default 0.4). */
  b?: number;
  /** Primary shards (default 1: one shard keeps BM25 statistics global, as in the embedded index). */
  shards?: number;
  /** Replicas (default 0, a single local node; use 1+ on a cluster). */
  replicas?: number;
  /** Refresh interval (default `1s`). */
  refreshInterval?: string;
  /** Mapping field limit (default 10 000: every distinct metadata key and type is a field). */
  totalFieldsLimit?: number;
}

export type MappingProperty = Record<string, unknown>;

export interface IndexCreateBody {
  settings: {
    index: Record<string, unknown>;
  };
  mappings: {
    dynamic: 'strict';
    date_detection: false;
    numeric_detection: false;
    dynamic_templates: Array<Record<string, { path_match: string; mapping: MappingProperty }>>;
    properties: Record<string, MappingProperty>;
  };
}

/** Keyword values longer than this many characters are not indexed (Lucene's term limit is 32 766 bytes). */
export const KEYWORD_IGNORE_ABOVE = 8191;

/** Settings and mappings of a new physical index. */
export function buildIndexBody(opts: IndexLayoutOptions = {}): IndexCreateBody {
  const k1 = opts.k1 ?? 0.9;
  const b = opts.b ?? 0.4;
  if (!(k1 >= 0) || !(b >= 0 && b <= 1)) throw new Error(`BM25 needs k1 >= 0 and 0 <= b <= 1 (got ${k1}, ${b})`);
  const keyword = { type: 'keyword' };
  return {
    settings: {
      index: {
        number_of_shards: opts.shards ?? 1,
        number_of_replicas: opts.replicas ?? 0,
        refresh_interval: opts.refreshInterval ?? '1s',
        'mapping.total_fields.limit': opts.totalFieldsLimit ?? 10_000,
        similarity: { [SIMILARITY_NAME]: { type: 'BM25', k1, b } },
      },
    },
    mappings: {
      dynamic: 'strict',
      date_detection: false,
      numeric_detection: false,
      dynamic_templates: [
        { md_strings: { path_match: `${METADATA_OBJECTS.string}.*`, mapping: { type: 'keyword', ignore_above: KEYWORD_IGNORE_ABOVE } } },
        { md_arrays: { path_match: `${METADATA_OBJECTS.array}.*`, mapping: { type: 'keyword', ignore_above: KEYWORD_IGNORE_ABOVE } } },
        { md_numbers: { path_match: `${METADATA_OBJECTS.number}.*`, mapping: { type: 'double' } } },
        { md_booleans: { path_match: `${METADATA_OBJECTS.boolean}.*`, mapping: { type: 'boolean' } } },
      ],
      properties: {
        chunk_id: keyword,
        document_id: keyword,
        tenant: keyword,
        acl: keyword,
        kind: keyword,
        version: { type: 'long' },
        parent_id: { type: 'keyword', index: false, doc_values: false },
        text: { type: 'text', analyzer: 'standard', similarity: SIMILARITY_NAME },
        text_seg: { type: 'text', analyzer: 'whitespace', similarity: SIMILARITY_NAME },
        [METADATA_OBJECTS.string]: { type: 'object', dynamic: true },
        [METADATA_OBJECTS.array]: { type: 'object', dynamic: true },
        [METADATA_OBJECTS.number]: { type: 'object', dynamic: true },
        [METADATA_OBJECTS.boolean]: { type: 'object', dynamic: true },
        chunk: { type: 'object', enabled: false },
      },
    },
  };
}
