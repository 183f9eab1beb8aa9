import { Metadata, status, type handleServerStreamingCall, type handleUnaryCall, type ServerUnaryCall, type ServerWritableStream } from '@grpc/grpc-js';
import type { GenerateCall, RerankCall, RetrieveCall } from '@rag/application';
import type { RagV1 } from '@rag/contracts';
import { AppError, extractTraceContext, inStage, Logger, SpanKind, withTraceContext, type Context } from '@rag/platform';
import type { Embedder } from '@rag/ports';
import { toGrpcStatus } from './grpc-errors';
import {
  embedRequestFromWire,
  embedResponseToWire,
  generateRequestFromWire,
  generationFinalToWire,
  rerankRequestFromWire,
  retrievalToWire,
  retrieveRequestFromWire,
  toWireChunk,
} from './grpc-mapping';

/** Initial metadata of Rerank: whether the server has a reranker (the client's `available`). */
export const RERANKER_AVAILABLE_HEADER = 'x-rag-reranker-available';
/** Trailer of Generate: the evidence score of the refusal gate (GenerationResult.evidence; not in GenerateChunk). */
export const EVIDENCE_TRAILER = 'x-rag-evidence';

const log = new Logger('grpc');

/** Aborted when the caller cancels or its deadline passes, so the local service stops its work. */
function callSignal(call: ServerUnaryCall<unknown, unknown> | ServerWritableStream<unknown, unknown>, method: string): AbortSignal {
  const ac = new AbortController();
  const abort = () => ac.abort(new AppError('deadline_exceeded', `${method} cancelled by the caller or its deadline`));
  if (call.cancelled) abort();
  else call.on('cancelled', abort);
  return ac.signal;
}

function reportFailure(method: string, e: unknown): ReturnType<typeof toGrpcStatus> {
  const st = toGrpcStatus(e);
  if (st.code === status.INTERNAL) log.error('rpc failed', { method, error: e });
  else log.debug('rpc rejected', { method, code: status[st.code], details: st.details });
  return st;
}

/** The caller's trace context from the call's metadata (W3C traceparent), so this service's spans join its trace. */
function callContext(call: { metadata: Metadata }): Context {
  return extractTraceContext(call.metadata.getMap() as Record<string, string>);
}

/**
 * A unary handler over an async function: validation/AppErrors become statuses. It runs in the caller's trace
 * context; the local service opens its stage span (and observes its stage latency) inside it.
 */
function unary<Req, Res>(method: string, fn: (req: Req, signal: AbortSignal, call: ServerUnaryCall<Req, Res>) => Promise<Res>): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const signal = callSignal(call as ServerUnaryCall<unknown, unknown>, method);
    withTraceContext(callContext(call), () => fn(call.request, signal, call)).then(
      (res) => callback(null, res),
      (e: unknown) => callback(reportFailure(method, e), null),
    );
  };
}

/** Embedder.Embed over the Embedder port (query or passage texts, batched). */
export function embedderGrpcController(embedder: Embedder): RagV1.EmbedderServer {
  return {
    embed: unary<RagV1.EmbedRequest, RagV1.EmbedResponse>('embed', async (req) => {
      const { texts, inputType } = embedRequestFromWire(req);
      // The Embedder port is served as is: a query embedding is the `query-embed` stage, passages are `embed`.
      const attributes = { 'rag.embedding.model': embedder.modelId, 'rag.embedding.dim': embedder.dim, 'rag.texts': texts.length };
      const vectors = await inStage(inputType === 'query' ? 'query-embed' : 'embed', attributes, () => embedder.embed(texts, inputType), {
        kind: SpanKind.SERVER,
      });
      return embedResponseToWire(embedder.modelId, embedder.dim, vectors);
    }),
  };
}

/** Retriever.Retrieve over the retriever service (filters validated with FiltersSchema). */
export function retrieverGrpcController(retriever: RetrieveCall): RagV1.RetrieverServer {
  return {
    retrieve: unary<RagV1.RetrieveRequest, RagV1.RetrieveResponse>('retrieve', async (req, signal) =>
      retrievalToWire(await retriever.retrieve(retrieveRequestFromWire(req), signal)),
    ),
  };
}

/** Reranker.Rerank over the reranker service; tells the client in initial metadata whether a reranker is configured. */
export function rerankerGrpcController(reranker: RerankCall): RagV1.RerankerServer {
  return {
    rerank: unary<RagV1.RerankRequest, RagV1.RerankResponse>('rerank', async (req, signal, call) => {
      const md = new Metadata();
      md.set(RERANKER_AVAILABLE_HEADER, String(reranker.available));
      call.sendMetadata(md);
      const { query, candidates, topN } = rerankRequestFromWire(req);
      const r = await reranker.rerank(query, candidates, topN, signal);
      return { results: r.results.map(toWireChunk), degraded: r.degraded };
    }),
  };
}

/** Generator.Generate: answer deltas as they are produced, then one final chunk (done=true) with the outcome. */
export function generatorGrpcController(generator: GenerateCall): RagV1.GeneratorServer {
  const generate: handleServerStreamingCall<RagV1.GenerateRequest, RagV1.GenerateChunk> = (call) => {
    const signal = callSignal(call as ServerWritableStream<unknown, unknown>, 'generate');
    const fail = (e: unknown) => {
      if (!call.cancelled) call.emit('error', reportFailure('generate', e));
    };
    let input: ReturnType<typeof generateRequestFromWire>;
    try {
      input = generateRequestFromWire(call.request);
    } catch (e) {
      fail(e);
      return;
    }
    const onDelta = (delta: string) => {
      if (delta && !call.cancelled) call.write({ delta, done: false, refused: false, cited_refs: [], degraded: [], answer: '' });
    };
    withTraceContext(callContext(call), () => generator.generate(input.question, input.sources, onDelta, signal)).then((result) => {
      if (call.cancelled) return;
      const trailer = new Metadata();
      trailer.set(EVIDENCE_TRAILER, String(result.evidence));
      call.write(generationFinalToWire(result));
      call.end(trailer);
    }, fail);
  };
  return { generate };
}
