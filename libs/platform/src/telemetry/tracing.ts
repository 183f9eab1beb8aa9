import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { Instrumentation } from '@opentelemetry/instrumentation';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KafkaJsInstrumentation } from '@opentelemetry/instrumentation-kafkajs';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  AlwaysOffSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NoopSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { stageTimer, type StageName } from './metrics';

/**
 * OpenTelemetry tracing of every service (and of the embedded runner): one span per pipeline and query stage, named
 * like the stage label of `rag_stage_duration_seconds` (STAGES), W3C trace context carried across processes so that
 * one ingestion and one query are each one trace.
 *
 * The transports are traced by the maintained OpenTelemetry instrumentations (`instrumentations()` below), which
 * also carry the W3C context: HTTP (the gateway's SERVER span, outgoing calls to stores and model servers), Express
 * (the matched route), gRPC (CLIENT/SERVER spans and metadata on the query path), kafkajs (`send <topic>` /
 * `process <topic>` spans and message headers) and pg (PostgreSQL queries). They patch modules as they are required,
 * so `startTracing` must run before any of them is loaded (apps/<name>/src/tracing.ts, imported first by every main).
 * The embedded log bus has no instrumentation: it writes `traceHeaders()` into its messages by hand and its consumers
 * continue the trace with `extractTraceContext`.
 *
 * Configuration is the standard OpenTelemetry environment:
 * - `OTEL_TRACES_EXPORTER`: `otlp` (OTLP over HTTP, JSON — @opentelemetry/exporter-trace-otlp-http), `console`, or
 *   `none`. Unset: `otlp` when `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, else `none`.
 * - `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`, `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`, `OTEL_TRACES_SAMPLER(_ARG)`,
 *   `OTEL_BSP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`: read by the SDK as documented.
 * - `OTEL_SDK_DISABLED=true`: no SDK at all (trace ids in responses are then random ids).
 *
 * Without an exporter the SDK still runs with an always-off sampler: trace and span ids are generated and propagated
 * (so `trace_id` in responses is a real, cross-process trace id), but no span is recorded — the cost is an id per
 * span and a context switch, nothing is buffered or serialized.
 */

export type TraceExporterKind = 'otlp' | 'console' | 'none';

export interface TracingOptions {
  /** Extra processors (tests: an in-memory exporter); when given, spans are recorded even without an exporter. */
  spanProcessors?: SpanProcessor[];
  /** Environment to read (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface TracingHandle {
  /** service.name of this process's spans. */
  serviceName: string;
  exporter: TraceExporterKind;
  /** True when spans are recorded (an exporter or a processor is configured). */
  recording: boolean;
  /** Names of the registered OpenTelemetry instrumentations (none when OTEL_SDK_DISABLED). */
  instrumentations: string[];
  /** Exports what is buffered and stops the SDK (idempotent). */
  shutdown(): Promise<void>;
}

let active: TracingHandle | undefined;

/** Which exporter the environment asks for; throws on an unsupported value (fail fast, like the config). */
export function traceExporterFromEnv(env: NodeJS.ProcessEnv = process.env): TraceExporterKind {
  const raw = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/json').trim();
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const kind = raw === '' ? (endpoint ? 'otlp' : 'none') : raw;
  if (kind !== 'otlp' && kind !== 'console' && kind !== 'none') {
    throw new Error(`OTEL_TRACES_EXPORTER=${raw} is not supported; use otlp, console or none`);
  }
  if (kind === 'otlp') {
    if (protocol !== 'http/json') {
      throw new Error(`OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL=${protocol} is not supported; traces are exported as OTLP/HTTP JSON (http/json)`);
    }
    if (endpoint) {
      try {
        new URL(endpoint);
      } catch {
        throw new Error(`OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT=${endpoint} is not a URL`);
      }
    }
  }
  return kind;
}

function exporterOf(kind: TraceExporterKind): SpanExporter | undefined {
  switch (kind) {
    case 'otlp':
      // Reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT / HEADERS / TIMEOUT; /v1/traces is appended to the base endpoint.
      return new OTLPTraceExporter();
    case 'console':
      return new ConsoleSpanExporter();
    case 'none':
      return undefined;
    default: {
      const never: never = kind;
      throw new Error(`unknown trace exporter ${String(never)}`);
    }
  }
}

/**
 * Starts the OpenTelemetry SDK for this process (call it first in every main). Idempotent: a second call returns the
 * first handle. Configuration problems end the process with exit code 2 and the reason, as config errors do.
 */
export function startTracing(service: string, opts: TracingOptions = {}): TracingHandle {
  if (active) return active;
  const env = opts.env ?? process.env;
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || `rag-${service}`;
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') {
    active = { serviceName, exporter: 'none', recording: false, instrumentations: [], shutdown: async () => undefined };
    return active;
  }
  let kind: TraceExporterKind;
  try {
    kind = traceExporterFromEnv(env);
  } catch (e) {
    process.stderr.write(`${service}: tracing: ${(e as Error).message}\n`);
    process.exit(2);
  }
  const exporter = exporterOf(kind);
  const extra = opts.spanProcessors ?? [];
  const recording = exporter !== undefined || extra.length > 0;
  // Constructing an instrumentation enables it (it hooks require at once), so they are made here, once per process.
  const registered = instrumentations();
  const sdk = new NodeSDK({
    serviceName,
    // With an exporter alone NodeSDK builds its batch processor from OTEL_BSP_*; test processors are added beside it.
    ...(exporter && extra.length === 0 ? { traceExporter: exporter } : {}),
    ...(extra.length > 0 ? { spanProcessors: [...extra, ...(exporter ? [new BatchSpanProcessor(exporter)] : [])] } : {}),
    // Not recording: ids are still generated and propagated, nothing is kept (see above).
    ...(!recording ? { spanProcessors: [new NoopSpanProcessor()], sampler: new AlwaysOffSampler(), autoDetectResources: false } : {}),
    // Traces only: no OTel logs or metrics pipelines (metrics are prom-client's /metrics).
    logRecordProcessors: [],
    metricReaders: [],
    instrumentations: registered,
  });
  sdk.start();
  let stopped: Promise<void> | undefined;
  const handle: TracingHandle = {
    serviceName,
    exporter: kind,
    recording,
    instrumentations: registered.map((i) => i.instrumentationName),
    shutdown: () =>
      (stopped ??= sdk.shutdown().catch((e: unknown) => {
        process.stderr.write(`${service}: tracing shutdown: ${String(e)}\n`);
      })),
  };
  active = handle;
  return handle;
}

/**
 * Paths that are not API traffic: no span (a probe or scrape every few seconds would otherwise flood the traces).
 * One list for the HTTP instrumentation and for the gateway's own accounting (libs/services/src/gateway/http.ts).
 */
export const UNTRACED_HTTP_PATHS: ReadonlySet<string> = new Set(['/metrics', '/healthz', '/readyz']);

/** Whether a request URL (path and query, as in `IncomingMessage.url`) is a probe or a scrape. */
export function isUntracedHttpPath(url: string | undefined): boolean {
  if (url === undefined) return false;
  const q = url.indexOf('?');
  return UNTRACED_HTTP_PATHS.has(q < 0 ? url : url.slice(0, q));
}

// Incoming requests → the SERVER span the HTTP instrumentation opened for them, and the callbacks that name it.
const serverSpans = new WeakMap<object, Span>();
const serverSpanEnds = new WeakMap<object, (span: Span) => void>();

/**
 * The SERVER span the HTTP instrumentation started for this incoming request (it is the request's active context),
 * with `onEnd` to run right before it ends — after the instrumentation's own attributes and its `METHOD route` name,
 * so what `onEnd` sets (e.g. the stage name `gateway`) is final. Undefined when the instrumentation did not see the
 * request (a probe path, OTEL_SDK_DISABLED, or http loaded before the SDK started); the caller then starts its own span.
 */
export function adoptServerSpan(req: object, onEnd: (span: Span) => void): Span | undefined {
  const span = serverSpans.get(req);
  if (span) serverSpanEnds.set(req, onEnd);
  return span;
}

/**
 * The instrumentations of the maintained OpenTelemetry packages this platform's transports use (see the header).
 * - http: probes and scrapes are not traced; outgoing calls only within a trace (no root span per background call).
 * - express: only the route (`http.route` and the SERVER span's name come from Express's matched route). Its
 *   middleware/router/handler spans are off: the stage spans are the unit of these traces, and `query` must stay the
 *   direct child of the `gateway` span (test/integration/tracing.spec.ts), not of "request handler - /v1/query".
 * - grpc: CLIENT/SERVER spans and metadata propagation on the query path, except the health service's Check/Watch
 *   (readiness probes every few seconds, the gRPC twin of the untraced HTTP probe paths).
 * - kafkajs: defaults (`send <topic>` / `process <topic>` spans, context in the message headers).
 * - pg: statements only inside a trace (no root span per pool or leader-lock query); parameters are never recorded.
 * - undici: Node's global `fetch` (the OpenAI-compatible LLM, HTTP embedder/reranker, Confluence/Notion connectors,
 *   webhooks) gets CLIENT spans and `traceparent` on the wire, only inside a trace (like outgoing http above).
 */
function instrumentations(): Instrumentation[] {
  return [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => isUntracedHttpPath(req.url),
      requireParentforOutgoingSpans: true,
      requestHook: (span, req) => {
        // Incoming requests only (an outgoing ClientRequest has setHeader).
        if (!('setHeader' in req)) serverSpans.set(req, span);
      },
      applyCustomAttributesOnSpan: (span, req) => {
        const onEnd = serverSpanEnds.get(req);
        if (!onEnd) return;
        serverSpanEnds.delete(req);
        onEnd(span);
      },
    }),
    new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.ROUTER, ExpressLayerType.REQUEST_HANDLER] }),
    new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch'] }),
    new KafkaJsInstrumentation(),
    new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
    new UndiciInstrumentation({ requireParentforSpans: true }),
  ];
}

/** The running tracing handle, if startTracing was called. */
export const tracingHandle = (): TracingHandle | undefined => active;

/** Flushes and stops tracing (shutdown hooks); a no-op when it was not started. */
export async function shutdownTracing(): Promise<void> {
  await active?.shutdown();
}

const tracer = () => trace.getTracer('rag');

/** The W3C trace id of the active span, or undefined when there is none (or tracing is off). */
export function activeTraceId(ctx: Context = context.active()): string | undefined {
  const sc = trace.getSpanContext(ctx);
  return sc && trace.isSpanContextValid(sc) ? sc.traceId : undefined;
}

/** Writes the active trace context (W3C `traceparent`, `tracestate`, `baggage`) into a header/metadata carrier. */
export function injectTraceContext(carrier: Record<string, string>, ctx: Context = context.active()): Record<string, string> {
  propagation.inject(ctx, carrier);
  return carrier;
}

/** Trace headers of the active context, for messages (empty when there is no active span). */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  return trace.getSpanContext(ctx) ? injectTraceContext({}, ctx) : {};
}

const recordGetter: TextMapGetter<Record<string, string | string[] | undefined>> = {
  keys: (c) => Object.keys(c),
  get: (c, key) => c[key] ?? c[key.toLowerCase()],
};

/** The context carried by message headers / gRPC metadata / HTTP headers (the root context when they carry none). */
export function extractTraceContext(carrier: Record<string, string | string[] | undefined>, base: Context = ROOT_CONTEXT): Context {
  return propagation.extract(base, carrier, recordGetter);
}

export interface SpanOptions {
  kind?: SpanKind;
  /** Parent context (default: the active one). */
  parent?: Context;
}

/**
 * Runs `fn` in a span (active for everything `fn` starts, so child spans, published messages and gRPC calls carry
 * it). A thrown error marks the span as failed and is rethrown. Attributes must never hold document text or secrets.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, opts: SpanOptions = {}): Promise<T> {
  const parent = opts.parent ?? context.active();
  return tracer().startActiveSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (e) {
      failSpan(span, e);
      throw e;
    } finally {
      span.end();
    }
  });
}

/**
 * `inSpan` named after the stage, also timed into `rag_stage_duration_seconds{stage}` (span name = stage label) —
 * except inside background work (metrics.ts asBackgroundWork), which is traced but not timed as a user-facing stage.
 */
export async function inStage<T>(stage: StageName, attributes: Attributes, fn: (span: Span) => Promise<T>, opts: SpanOptions = {}): Promise<T> {
  const end = stageTimer(stage);
  try {
    return await inSpan(stage, attributes, fn, opts);
  } finally {
    end();
  }
}

/** Starts a span that the caller ends (e.g. a gateway request ending on `finish`); it is not made active. */
export function startSpan(name: string, attributes: Attributes, opts: { kind?: SpanKind; parent?: Context } = {}): { span: Span; context: Context } {
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Records an error on a span: exception event and ERROR status (message only; no stack of user data). */
export function failSpan(span: Span, e: unknown): void {
  if (!span.isRecording()) return;
  const message = e instanceof Error ? e.message : String(e);
  span.recordException(e instanceof Error ? e : new Error(message));
  span.setStatus({ code: SpanStatusCode.ERROR, message: message.slice(0, 500) });
}

/** Adds attributes to the active span (no-op when there is none or it is not recording). */
export function setSpanAttributes(attributes: Attributes): void {
  const span = trace.getActiveSpan();
  if (span?.isRecording()) span.setAttributes(attributes);
}

/**
 * Runs `fn` outside any active trace (background work started while serving a request — a calibration, a refresh —
 * gets its own trace instead of hundreds of spans in the request's).
 */
export function outsideTrace<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}

/** Runs `fn` with `ctx` as the active context. */
export function withTraceContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/**
 * Runs `fn` with tracing suppressed: instrumentations open no spans and inject no context inside it (the kafkajs
 * instrumentation then leaves message headers that the caller filled itself untouched).
 */
export function withTracingSuppressed<T>(fn: () => T): T {
  return context.with(suppressTracing(context.active()), fn);
}

export { SpanKind };
export type { Attributes, Context, Span };
