export { ElasticsearchKeywordIndex, ElasticsearchEngineClient } from './elasticsearch.adapter';
export type { ElasticsearchKeywordIndexOptions } from './elasticsearch.adapter';
