import { credentials, Metadata, type CallOptions, type ChannelOptions, type ClientUnaryCall, type ServiceError } from '@grpc/grpc-js';
import type { GenerateCall, GenerationResult, QueryEmbeddingCall, RerankCall, RetrieveCall, RetrieveRequest } from '@rag/application';
import { RagV1, type Degraded, type RetrievalResult, type ScoredChunk } from '@rag/contracts';
import { AppError, injectTraceContext, inSpan, SpanKind, type AppConfig, type Span } from '@rag/platform';
import { fromGrpcError } from './grpc-errors';
import { fromWireChunk, retrievalFromWire, retrieveRequestToWire, toDegraded, toWireChunk } from './grpc-mapping';
import { GRPC_MAX_MESSAGE_BYTES } from './grpc-server';
import { EVIDENCE_TRAILER, RERANKER_AVAILABLE_HEADER } from './query-path.grpc.controller';

export interface GrpcClientOptions {
  /** `host:port` of the service. */
  address: string;
  /** Deadline of every call; the caller's AbortSignal cancels earlier. */
  deadlineMs: number;
  channelOptions?: ChannelOptions;
}

/** Reconnect quickly after a service restarts; bounded messages as on the server. */
const CHANNEL_DEFAULTS: ChannelOptions = {
  'grpc.max_receive_message_length': GRPC_MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': GRPC_MAX_MESSAGE_BYTES,
  'grpc.initial_reconnect_backoff_ms': 500,
  'grpc.max_reconnect_backoff_ms': 5_000,
  'grpc.keepalive_time_ms': 60_000,
};

const channel = (opts: GrpcClientOptions): ChannelOptions => ({ ...CHANNEL_DEFAULTS, ...opts.channelOptions });

/** Why a call the caller aborted failed: the caller's own reason when it is an AppError, else its deadline. */
function abortError(what: string, signal: AbortSignal): AppError {
  const reason: unknown = signal.reason;
  if (reason instanceof AppError) return reason;
  return new AppError('deadline_exceeded', `${what} cancelled by the caller${reason instanceof Error ? ` (${reason.message})` : ''}`);
}

/** `what` ('embedder.Embed') → the RPC's full name ('rag.v1.Embedder/Embed'), the client span's name. */
function rpcName(what: string): { name: string; service: string; method: string } {
  const [svc = what, method = ''] = what.split('.');
  const service = `rag.v1.${svc.charAt(0).toUpperCase()}${svc.slice(1)}`;
  return { name: `${service}/${method}`, service, method };
}

/**
 * Runs a call in a CLIENT span (rpc.* attributes) and hands it metadata carrying that span's W3C trace context, so
 * the service's stage span is its child: one query is one trace across the gateway and the four services.
 */
function tracedCall<T>(what: string, address: string, call: (md: Metadata, span: Span) => Promise<T>): Promise<T> {
  const rpc = rpcName(what);
  return inSpan(
    rpc.name,
    { 'rpc.system': 'grpc', 'rpc.service': rpc.service, 'rpc.method': rpc.method, 'server.address': address },
    (span) => {
      const md = new Metadata();
      for (const [k, v] of Object.entries(injectTraceContext({}))) md.set(k, v);
      return call(md, span);
    },
    { kind: SpanKind.CLIENT },
  );
}

type UnaryStarter<Res> = (metadata: Metadata, options: Partial<CallOptions>, callback: (err: ServiceError | null, res: Res) => void) => ClientUnaryCall;

/** One unary call with a deadline, cancelled by the caller's signal, failures mapped to AppError. */
function unaryCall<Res>(
  what: string,
  address: string,
  deadlineMs: number,
  start: UnaryStarter<Res>,
  signal?: AbortSignal,
  onMetadata?: (md: Metadata) => void,
): Promise<Res> {
  return tracedCall(what, address, (metadata) => unaryCallWith(metadata, what, deadlineMs, start, signal, onMetadata));
}

function unaryCallWith<Res>(
  metadata: Metadata,
  what: string,
  deadlineMs: number,
  start: UnaryStarter<Res>,
  signal?: AbortSignal,
  onMetadata?: (md: Metadata) => void,
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(what, signal));
      return;
    }
    const onAbort = () => call.cancel();
    const call = start(metadata, { deadline: Date.now() + deadlineMs }, (err, res) => {
      signal?.removeEventListener('abort', onAbort);
      if (!err) resolve(res);
      else if (signal?.aborted) reject(abortError(what, signal));
      else reject(fromGrpcError(err, what));
    });
    if (onMetadata) call.on('metadata', onMetadata);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** QueryEmbeddingCall over Embedder.Embed. */
export class GrpcQueryEmbeddingClient implements QueryEmbeddingCall {
  private readonly client: RagV1.EmbedderClient;
  constructor(private readonly opts: GrpcClientOptions) {
    this.client = new RagV1.EmbedderClient(opts.address, credentials.createInsecure(), channel(opts));
  }

  async embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array> {
    const res = await unaryCall<RagV1.EmbedResponse>(
      'embedder.Embed',
      this.opts.address,
      this.opts.deadlineMs,
      (md, o, cb) => this.client.embed({ texts: [text], input_type: 'query' }, md, o, cb),
      signal,
    );
    const v = res.embeddings[0]?.values;
    if (!v || v.length === 0) throw new AppError('internal', 'embedder.Embed returned no vector');
    return Float32Array.from(v);
  }

  close(): void {
    this.client.close();
  }
}

/** RetrieveCall over Retriever.Retrieve. */
export class GrpcRetrieveClient implements RetrieveCall {
  private readonly client: RagV1.RetrieverClient;
  constructor(private readonly opts: GrpcClientOptions) {
    this.client = new RagV1.RetrieverClient(opts.address, credentials.createInsecure(), channel(opts));
  }

  async retrieve(req: RetrieveRequest, signal?: AbortSignal): Promise<RetrievalResult> {
    const wire = retrieveRequestToWire(req);
    const res = await unaryCall<RagV1.RetrieveResponse>('retriever.Retrieve', this.opts.address, this.opts.deadlineMs, (md, o, cb) => this.client.retrieve(wire, md, o, cb), signal);
    return retrievalFromWire(res);
  }

  close(): void {
    this.client.close();
  }
}

/**
 * RerankCall over Reranker.Rerank. `available` starts from configuration (RAG_RERANKER of the deployment) and
 * follows what the reranker service reports in the metadata of each answer.
 */
export class GrpcRerankClient implements RerankCall {
  private readonly client: RagV1.RerankerClient;
  private isAvailable: boolean;
  constructor(private readonly opts: GrpcClientOptions & { available: boolean }) {
    this.client = new RagV1.RerankerClient(opts.address, credentials.createInsecure(), channel(opts));
    this.isAvailable = opts.available;
  }

  get available(): boolean {
    return this.isAvailable;
  }

  async rerank(query: string, candidates: ScoredChunk[], topN: number, signal?: AbortSignal): Promise<{ results: ScoredChunk[]; degraded: Degraded[] }> {
    const req: RagV1.RerankRequest = { query, candidates: candidates.map(toWireChunk), top_n: topN };
    const res = await unaryCall<RagV1.RerankResponse>(
      'reranker.Rerank',
      this.opts.address,
      this.opts.deadlineMs,
      (md, o, cb) => this.client.rerank(req, md, o, cb),
      signal,
      (md) => {
        const v = md.get(RERANKER_AVAILABLE_HEADER)[0];
        if (v === 'true' || v === 'false') this.isAvailable = v === 'true';
      },
    );
    return { results: res.results.map(fromWireChunk), degraded: toDegraded(res.degraded) };
  }

  close(): void {
    this.client.close();
  }
}

/** GenerateCall over the server-streaming Generator.Generate: deltas to `onDelta`, the final chunk as the result. */
export class GrpcGenerateClient implements GenerateCall {
  private readonly client: RagV1.GeneratorClient;
  constructor(private readonly opts: GrpcClientOptions) {
    this.client = new RagV1.GeneratorClient(opts.address, credentials.createInsecure(), channel(opts));
  }

  generate(question: string, sources: ScoredChunk[], onDelta?: (text: string) => void, signal?: AbortSignal): Promise<GenerationResult> {
    return tracedCall('generator.Generate', this.opts.address, (md) => this.stream(md, question, sources, onDelta, signal));
  }

  private stream(md: Metadata, question: string, sources: ScoredChunk[], onDelta?: (text: string) => void, signal?: AbortSignal): Promise<GenerationResult> {
    const what = 'generator.Generate';
    return new Promise<GenerationResult>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(what, signal));
        return;
      }
      let final: RagV1.GenerateChunk | undefined;
      let failed = false;
      const call = this.client.generate({ question, sources: sources.map(toWireChunk) }, md, { deadline: Date.now() + this.opts.deadlineMs });
      const onAbort = () => call.cancel();
      signal?.addEventListener('abort', onAbort, { once: true });
      call.on('data', (chunk: RagV1.GenerateChunk) => {
        if (chunk.done) final = chunk;
        else if (chunk.delta && onDelta) {
          try {
            onDelta(chunk.delta);
          } catch {
            /* a failing consumer of deltas must not break the call */
          }
        }
      });
      call.on('error', (err: ServiceError) => {
        failed = true;
        signal?.removeEventListener('abort', onAbort);
        reject(signal?.aborted ? abortError(what, signal) : fromGrpcError(err, what));
      });
      call.on('status', (st) => {
        signal?.removeEventListener('abort', onAbort);
        if (failed) return;
        if (!final) {
          reject(new AppError('internal', `${what}: the stream ended without its final chunk`));
          return;
        }
        const evidence = Number(st.metadata.get(EVIDENCE_TRAILER)[0]);
        resolve({
          answer: final.answer,
          refused: final.refused,
          cited_refs: final.cited_refs,
          degraded: toDegraded(final.degraded),
          evidence: Number.isFinite(evidence) ? evidence : 0,
        });
      });
    });
  }

  close(): void {
    this.client.close();
  }
}

export interface GrpcQueryPathClients {
  embedding: GrpcQueryEmbeddingClient;
  retrieve: GrpcRetrieveClient;
  rerank: GrpcRerankClient;
  generate: GrpcGenerateClient;
  close(): void;
}

/**
 * The gateway's four query-path clients from configuration: RAG_*_GRPC addresses, RAG_DEADLINE_MS on every call.
 * Generate's deadline also covers RAG_LLM_TIMEOUT_MS (+5 s), so a slow LLM still ends in the generator's extractive
 * fallback rather than in a gateway-side timeout.
 */
export function createGrpcQueryPathClients(
  config: Pick<AppConfig, 'RAG_EMBEDDER_GRPC' | 'RAG_RETRIEVER_GRPC' | 'RAG_RERANKER_GRPC' | 'RAG_GENERATOR_GRPC' | 'RAG_DEADLINE_MS' | 'RAG_LLM_TIMEOUT_MS' | 'RAG_RERANKER'>,
): GrpcQueryPathClients {
  const deadlineMs = config.RAG_DEADLINE_MS;
  const clients = {
    embedding: new GrpcQueryEmbeddingClient({ address: config.RAG_EMBEDDER_GRPC, deadlineMs }),
    retrieve: new GrpcRetrieveClient({ address: config.RAG_RETRIEVER_GRPC, deadlineMs }),
    rerank: new GrpcRerankClient({ address: config.RAG_RERANKER_GRPC, deadlineMs, available: config.RAG_RERANKER !== 'none' }),
    generate: new GrpcGenerateClient({ address: config.RAG_GENERATOR_GRPC, deadlineMs: Math.max(deadlineMs, config.RAG_LLM_TIMEOUT_MS + 5_000) }),
  };
  return {
    ...clients,
    close() {
      for (const c of Object.values(clients)) c.close();
    },
  };
}
