import './tracing';
import { GeneratorModule, GrpcServerModule, runStandalone } from '@rag/services';

// Generator.Generate (server streaming) over gRPC on RAG_GRPC_PORT (distributed mode); /healthz, /readyz, /metrics on RAG_PORT.
void runStandalone('generator', [GeneratorModule, GrpcServerModule.forService('generator', GeneratorModule)], ['llm'], { grpc: 'generator' });
