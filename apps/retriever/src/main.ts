import './tracing';
import { GrpcServerModule, RetrieverModule, runStandalone } from '@rag/services';

// Retriever.Retrieve over gRPC on RAG_GRPC_PORT (distributed mode); /healthz, /readyz, /metrics on RAG_PORT.
void runStandalone('retriever', [RetrieverModule, GrpcServerModule.forService('retriever', RetrieverModule)], ['registry', 'vectors', 'keywords'], { grpc: 'retriever' });
