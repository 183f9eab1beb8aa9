/*
 * Where the query-path services' wire contract lives at run time: Transport.GRPC (servers) and ClientGrpc (clients)
 * load src/proto/rag.proto with @grpc/proto-loader. The generated interfaces (src/generated/rag.ts, RagV1) describe
 * the objects the loader produces with these options, so the two never drift: the .proto is the one definition.
 */

/** The proto package of the query path (the `package` option of Transport.GRPC / ClientGrpc). */
export const RAG_GRPC_PACKAGE = 'rag.v1';

/** rag.proto beside this file (copied into dist/ by the build's --copy-files). */
export const RAG_PROTO_PATH = `${__dirname}/proto/rag.proto`;

/**
 * proto-loader options matching the generated interfaces: .proto field names (keepCase, as snakeToCamel=false),
 * every scalar and repeated field present with its default (`defaults`/`arrays`/`objects`), int64 as number.
 */
export const GRPC_LOADER_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, arrays: true, objects: true, oneofs: true };

/** Fully qualified service names (also their names in grpc.health.v1). */
export const RAG_GRPC_SERVICES = {
  embedder: 'rag.v1.Embedder',
  retriever: 'rag.v1.Retriever',
  reranker: 'rag.v1.Reranker',
  generator: 'rag.v1.Generator',
} as const;
export type QueryPathService = keyof typeof RAG_GRPC_SERVICES;
