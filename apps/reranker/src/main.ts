import { RerankerModule, runStandalone } from '@rag/services';

void runStandalone('reranker', [RerankerModule], ['reranker']);
