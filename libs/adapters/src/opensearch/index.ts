export { OpenSearchKeywordIndex, OpenSearchEngineClient } from './opensearch.adapter';
export type { OpenSearchKeywordIndexOptions } from './opensearch.adapter';
