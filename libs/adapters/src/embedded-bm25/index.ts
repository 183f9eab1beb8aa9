export { EmbeddedBm25KeywordIndex, FOLLOW_CHANGES_MS, indexedText } from './embedded-bm25.adapter';
export type { EmbeddedBm25KeywordIndexOptions, ReclusterPolicy, ReclusterResult } from './embedded-bm25.adapter';
export { scopeAndFiltersSql } from './sql-filters';
export type { SqlCondition } from './sql-filters';
