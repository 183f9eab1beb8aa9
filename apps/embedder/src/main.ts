import './tracing';
import { EmbedderModule, GrpcServerModule, runStandalone } from '@rag/services';

// rag.chunks.v1 → rag.chunks.embedded.v1 on the bus; Embedder.Embed over gRPC on RAG_GRPC_PORT when set.
void runStandalone('embedder', [EmbedderModule, GrpcServerModule.forService('embedder', EmbedderModule)], ['bus', 'embedder'], { grpc: 'embedder' });
