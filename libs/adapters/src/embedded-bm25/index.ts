export { EmbeddedBm25KeywordIndex, indexedText } from './embedded-bm25.adapter';
export type { EmbeddedBm25KeywordIndexOptions, ReclusterPolicy, ReclusterResult } from './embedded-bm25.adapter';
export { scopeAndFiltersSql } from './sql-filters';
export type { SqlCondition } from './sql-filters';
