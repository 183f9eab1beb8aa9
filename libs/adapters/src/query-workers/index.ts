export { WorkerGrounding, type WorkerGroundingOptions, type WorkerGroundingStats } from './worker-grounding.adapter';
export { OffloadedKeywordIndex, type OffloadedKeywordIndexOptions, type OffloadedKeywordStats } from './offloaded-keyword-index.adapter';
