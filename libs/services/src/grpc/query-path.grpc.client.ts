import { Metadata, type CallOptions, type ChannelOptions } from '@grpc/grpc-js';
import { ClientProxyFactory, Transport, type ClientGrpc, type ClientGrpcProxy, type GrpcOptions } from '@nestjs/microservices';
import type { Observable } from 'rxjs';
import type { GenerateCall, GenerationResult, QueryEmbeddingCall, RerankCall, RetrieveCall, RetrieveRequest } from '@rag/application';
import { GRPC_LOADER_OPTIONS, RAG_GRPC_PACKAGE, RAG_PROTO_PATH, type Degraded, type RagV1, type RetrievalResult, type ScoredChunk } from '@rag/contracts';
import { AppError, type AppConfig } from '@rag/platform';
import { fromGrpcError } from './grpc-errors';
import { fromWireChunk, retrievalFromWire, retrieveRequestToWire, statementsFromWire, toDegraded, toWireChunk } from './grpc-mapping';
import { GRPC_MAX_MESSAGE_BYTES } from './grpc-server';

/**
 * The channel's service config: calls spread round-robin over every address the target resolves to — a headless
 * Kubernetes Service (`dns:///retriever-headless:50052`) or a list (`ipv4:10.0.0.1:50052,10.0.0.2:50052`) — and a
 * replica that goes away is dropped from the picker; with one address it is pick-first. A call that fails UNAVAILABLE
 * (e.g. picked on a replica in the moment it died) is retried on another; every query-path call is a read, so a
 * retry is safe, and the call's deadline still bounds all attempts together.
 */
export const QUERY_PATH_SERVICE_CONFIG = {
  loadBalancingConfig: [{ round_robin: {} }],
  methodConfig: [
    {
      name: ['Embedder', 'Retriever', 'Reranker', 'Generator'].map((s) => ({ service: `rag.v1.${s}` })),
      retryPolicy: { maxAttempts: 3, initialBackoff: '0.05s', maxBackoff: '0.5s', backoffMultiplier: 2, retryableStatusCodes: ['UNAVAILABLE'] },
    },
  ],
};

/** Balanced and retried as above; reconnect quickly after a service restarts. */
const CHANNEL_DEFAULTS: ChannelOptions = {
  'grpc.service_config': JSON.stringify(QUERY_PATH_SERVICE_CONFIG),
  'grpc.initial_reconnect_backoff_ms': 500,
  'grpc.max_reconnect_backoff_ms': 5_000,
  'grpc.keepalive_time_ms': 60_000,
};

/** ClientGrpc options for one query-path service at `url` (`host:port`, or any grpc-js target name: `dns:///…`, `ipv4:a,b`). */
export function grpcClientOptions(url: string, channelOptions: ChannelOptions = {}): GrpcOptions {
  return {
    transport: Transport.GRPC,
    options: {
      package: RAG_GRPC_PACKAGE,
      protoPath: RAG_PROTO_PATH,
      loader: GRPC_LOADER_OPTIONS,
      url,
      maxReceiveMessageLength: GRPC_MAX_MESSAGE_BYTES,
      maxSendMessageLength: GRPC_MAX_MESSAGE_BYTES,
      channelOptions: { ...CHANNEL_DEFAULTS, ...channelOptions },
    },
  };
}

/** A ClientGrpc for `url` (outside a Nest module: tests, tools); close it with `.close()`. */
export const createGrpcClient = (url: string, channelOptions?: ChannelOptions): ClientGrpcProxy =>
  ClientProxyFactory.create(grpcClientOptions(url, channelOptions)) as unknown as ClientGrpcProxy;

/**
 * The generated client interface with the grpc-js CallOptions argument ClientGrpc passes through to the call
 * (`client.method(request, metadata, options, callback)`): that is what puts the deadline on the wire (grpc-timeout).
 * grpc-js wants a Metadata object whenever options are given (the instrumentation adds traceparent to it).
 */
type WithCallOptions<C> = {
  [K in keyof C]: C[K] extends (request: infer Q, metadata?: Metadata) => Observable<infer R> ? (request: Q, metadata: Metadata, options: CallOptions) => Observable<R> : never;
};

/** Why a call the caller aborted failed: the caller's own reason when it is an AppError, else its deadline. */
function abortError(what: string, signal: AbortSignal): AppError {
  const reason: unknown = signal.reason;
  if (reason instanceof AppError) return reason;
  return new AppError('deadline_exceeded', `${what} cancelled by the caller${reason instanceof Error ? ` (${reason.message})` : ''}`);
}

/**
 * Subscribes to one call's Observable: every message to `onNext`, the last one as the result; the caller's signal
 * unsubscribes (ClientGrpc then cancels the call), failures become AppErrors the gateway maps to HTTP.
 */
function callOnce<R>(what: string, start: () => Observable<R>, signal?: AbortSignal, onNext?: (value: R) => void): Promise<R | undefined> {
  return new Promise<R | undefined>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(what, signal));
      return;
    }
    let last: R | undefined;
    const done = () => signal?.removeEventListener('abort', onAbort);
    const subscription = start().subscribe({
      next: (v) => {
        last = v;
        onNext?.(v);
      },
      error: (e: unknown) => {
        done();
        reject(signal?.aborted ? abortError(what, signal) : fromGrpcError(e, what));
      },
      complete: () => {
        done();
        resolve(last);
      },
    });
    function onAbort() {
      subscription.unsubscribe();
      reject(abortError(what, signal!));
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const deadline = (ms: number): CallOptions => ({ deadline: Date.now() + ms });

/** QueryEmbeddingCall over Embedder.Embed. */
export class GrpcQueryEmbeddingClient implements QueryEmbeddingCall {
  private readonly service: WithCallOptions<RagV1.EmbedderClient>;
  constructor(
    client: ClientGrpc,
    private readonly deadlineMs: number,
  ) {
    this.service = client.getService('Embedder');
  }

  async embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array> {
    const res = await callOnce('embedder.Embed', () => this.service.embed({ texts: [text], input_type: 'query' }, new Metadata(), deadline(this.deadlineMs)), signal);
    const v = res?.embeddings[0]?.values;
    if (!v || v.length === 0) throw new AppError('internal', 'embedder.Embed returned no vector');
    return Float32Array.from(v);
  }
}

/** RetrieveCall over Retriever.Retrieve. */
export class GrpcRetrieveClient implements RetrieveCall {
  private readonly service: WithCallOptions<RagV1.RetrieverClient>;
  constructor(
    client: ClientGrpc,
    private readonly deadlineMs: number,
  ) {
    this.service = client.getService('Retriever');
  }

  async retrieve(req: RetrieveRequest, signal?: AbortSignal): Promise<RetrievalResult> {
    const wire = retrieveRequestToWire(req);
    const res = await callOnce('retriever.Retrieve', () => this.service.retrieve(wire, new Metadata(), deadline(this.deadlineMs)), signal);
    if (!res) throw new AppError('internal', 'retriever.Retrieve returned nothing');
    return retrievalFromWire(res);
  }
}

/**
 * RerankCall over Reranker.Rerank. `available` starts from configuration (RAG_RERANKER of the deployment) and
 * follows what the reranker service reports in each answer (`reranker_available`).
 */
export class GrpcRerankClient implements RerankCall {
  private readonly service: WithCallOptions<RagV1.RerankerClient>;
  private isAvailable: boolean;
  constructor(
    client: ClientGrpc,
    private readonly deadlineMs: number,
    available: boolean,
  ) {
    this.service = client.getService('Reranker');
    this.isAvailable = available;
  }

  get available(): boolean {
    return this.isAvailable;
  }

  async rerank(query: string, candidates: ScoredChunk[], topN: number, signal?: AbortSignal): Promise<{ results: ScoredChunk[]; degraded: Degraded[] }> {
    const req: RagV1.RerankRequest = { query, candidates: candidates.map(toWireChunk), top_n: topN };
    const res = await callOnce('reranker.Rerank', () => this.service.rerank(req, new Metadata(), deadline(this.deadlineMs)), signal);
    if (!res) throw new AppError('internal', 'reranker.Rerank returned nothing');
    this.isAvailable = res.reranker_available;
    return { results: res.results.map(fromWireChunk), degraded: toDegraded(res.degraded) };
  }
}

/** GenerateCall over the server-streaming Generator.Generate: deltas to `onDelta`, the final chunk as the result. */
export class GrpcGenerateClient implements GenerateCall {
  private readonly service: WithCallOptions<RagV1.GeneratorClient>;
  constructor(
    client: ClientGrpc,
    private readonly deadlineMs: number,
  ) {
    this.service = client.getService('Generator');
  }

  async generate(question: string, sources: ScoredChunk[], onDelta?: (text: string) => void, signal?: AbortSignal): Promise<GenerationResult> {
    const what = 'generator.Generate';
    const request: RagV1.GenerateRequest = { question, sources: sources.map(toWireChunk) };
    const final = await callOnce(
      what,
      () => this.service.generate(request, new Metadata(), deadline(this.deadlineMs)),
      signal,
      (chunk) => {
        if (chunk.done || !chunk.delta || !onDelta) return;
        try {
          onDelta(chunk.delta);
        } catch {
          /* a failing consumer of deltas must not break the call */
        }
      },
    );
    if (!final?.done) throw new AppError('internal', `${what}: the stream ended without its final chunk`);
    return { answer: final.answer, refused: final.refused, cited_refs: final.cited_refs, degraded: toDegraded(final.degraded), evidence: final.evidence, statements: statementsFromWire(final.statements) };
  }
}

type QueryPathConfig = Pick<AppConfig, 'RAG_DEADLINE_MS' | 'RAG_LLM_TIMEOUT_MS' | 'RAG_RERANKER'>;

/** Every call's deadline: RAG_DEADLINE_MS; Generate's also covers RAG_LLM_TIMEOUT_MS (+5 s), so a slow LLM still ends in the generator's extractive fallback rather than in a gateway-side timeout. */
export const queryPathDeadlines = (c: QueryPathConfig) => ({ unary: c.RAG_DEADLINE_MS, generate: Math.max(c.RAG_DEADLINE_MS, c.RAG_LLM_TIMEOUT_MS + 5_000) });

/** The four query-path calls over ClientGrpc clients of the four services. */
export function grpcQueryPathCalls(
  clients: { embedder: ClientGrpc; retriever: ClientGrpc; reranker: ClientGrpc; generator: ClientGrpc },
  config: QueryPathConfig,
): { embedding: GrpcQueryEmbeddingClient; retrieve: GrpcRetrieveClient; rerank: GrpcRerankClient; generate: GrpcGenerateClient } {
  const d = queryPathDeadlines(config);
  return {
    embedding: new GrpcQueryEmbeddingClient(clients.embedder, d.unary),
    retrieve: new GrpcRetrieveClient(clients.retriever, d.unary),
    rerank: new GrpcRerankClient(clients.reranker, d.unary, config.RAG_RERANKER !== 'none'),
    generate: new GrpcGenerateClient(clients.generator, d.generate),
  };
}
