import './tracing';
import { GrpcServerModule, RerankerModule, runStandalone } from '@rag/services';

// Reranker.Rerank over gRPC on RAG_GRPC_PORT (distributed mode); /healthz, /readyz, /metrics on RAG_PORT.
void runStandalone('reranker', [RerankerModule, GrpcServerModule.forService('reranker', RerankerModule)], ['reranker'], { grpc: 'reranker' });
