import { RetrieverModule, runStandalone } from '@rag/services';

void runStandalone('retriever', [RetrieverModule], ['registry', 'embedder', 'vectors', 'keywords']);
