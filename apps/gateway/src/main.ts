import { GatewayModule, LocalQueryPathModule, runStandalone } from '@rag/services';

// Until the gRPC transport is wired (distributed mode), the gateway process runs the query path in-process.
void runStandalone('gateway', [GatewayModule.register(LocalQueryPathModule)], ['bus', 'registry', 'embedder', 'vectors', 'keywords', 'reranker', 'llm'], { gatewayHttp: true });
