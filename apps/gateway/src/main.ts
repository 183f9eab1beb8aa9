import './tracing';
import { loadConfig } from '@rag/platform';
import { GatewayModule, GrpcQueryPathModule, LocalQueryPathModule, runStandalone } from '@rag/services';

/**
 * Distributed mode (RAG_BUS=kafka): the query path is gRPC calls to the embedder, retriever, reranker and generator
 * processes (RAG_*_GRPC), so this process needs only the bus, the registry and the LLM (query expansion).
 * Otherwise (separate processes sharing the embedded log bus and stores) it runs the query path in-process.
 */
function distributed(): boolean {
  try {
    return loadConfig().RAG_BUS === 'kafka';
  } catch {
    return false; // runStandalone reports the configuration problems and exits
  }
}

if (distributed()) {
  void runStandalone('gateway', [GatewayModule.register(GrpcQueryPathModule)], ['bus', 'registry', 'llm'], { gatewayHttp: true });
} else {
  void runStandalone('gateway', [GatewayModule.register(LocalQueryPathModule)], ['bus', 'registry', 'embedder', 'vectors', 'keywords', 'reranker', 'llm'], {
    gatewayHttp: true,
  });
}
