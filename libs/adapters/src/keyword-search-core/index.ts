export {
  buildIndexBody,
  decodeFieldKey,
  encodeFieldKey,
  indexNames,
  metadataField,
  KEYWORD_IGNORE_ABOVE,
  METADATA_OBJECTS,
  SIMILARITY_NAME,
} from './mapping';
export type { IndexCreateBody, IndexLayoutOptions, IndexNames, MappingProperty, MetadataKind } from './mapping';
export { bulkIndexOperations, engineId, toChunkDocument, MAX_ENGINE_ID_BYTES } from './documents';
export type { BulkIndexAction, ChunkDocument } from './documents';
export { buildSearchBody, countQuery, documentQuery, filterClauses, rankHits, scopeClauses, MAX_RESULT_WINDOW, TIE_MARGIN } from './query';
export type { BoolQuery, FieldValue, Query, QueryBody, RangeBounds, SearchBody, SearchBodyOptions, SearchBodyRequest } from './query';
export {
  parseAliasResponse,
  parseBulkResponse,
  parseCountResponse,
  parseDeleteByQueryResponse,
  parseMgetResponse,
  parseReindexResponse,
  parseSearchResponse,
} from './responses';
export type { BulkFailure, ReindexResult, SearchParseResult } from './responses';
export { ensureAliasedIndex, reindexAndSwapAliases } from './aliases';
export type { AliasTimeouts, ReindexOptions, ReindexSummary } from './aliases';
export { errorStatus, errorType } from './engine-client';
export type { AliasAction, BulkRefresh, CreateIndexRequest, KeywordEngineClient } from './engine-client';
export { SearchEngineKeywordIndex } from './search-engine-keyword-index';
export type { SearchEngineKeywordIndexOptions } from './search-engine-keyword-index';
