/** DI tokens of the composition layer (the ports' own tokens live in @rag/ports). */
export const CONFIG = Symbol('CONFIG');
/** Query-path calls: local services when embedded, gRPC clients when distributed. */
export const QUERY_EMBEDDING = Symbol('QUERY_EMBEDDING');
export const RETRIEVE_CALL = Symbol('RETRIEVE_CALL');
export const RERANK_CALL = Symbol('RERANK_CALL');
export const GENERATE_CALL = Symbol('GENERATE_CALL');
/** The relevance gate's per-tenant calibration (generator module): `{ settingsFor, ensure, watch, stop }`, or null without an index in this process. */
export const GATE_CALIBRATION = Symbol('GATE_CALIBRATION');
