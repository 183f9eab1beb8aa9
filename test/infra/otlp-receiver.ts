/**
 * A small OTLP/HTTP trace receiver for the distributed tracing suite: the services export their spans exactly as they
 * would to an OpenTelemetry Collector (OTEL_EXPORTER_OTLP_ENDPOINT, @opentelemetry/exporter-trace-otlp-http, JSON
 * encoding), and this server decodes the documented OTLP JSON (ExportTraceServiceRequest: resourceSpans →
 * scopeSpans → spans, hex trace/span ids, attributes as AnyValue) into plain records. Hand-written because no
 * collector package is available here; it implements only POST /v1/traces.
 */
import { createServer, type Server } from 'node:http';

export interface ReceivedSpan {
  service: string;
  /** The instrumentation scope (tracer) name: `rag` for stage spans, `@opentelemetry/instrumentation-…` for transports. */
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, string | number | boolean>;
  statusCode: number;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: KeyValue[];
  status?: { code?: number };
}
interface ExportTraceServiceRequest {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { scope?: { name?: string }; spans?: OtlpSpan[] }[] }[];
}

function value(v: AnyValue | undefined): string | number | boolean {
  if (!v) return '';
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return JSON.stringify(v);
}
const attrs = (kvs: KeyValue[] | undefined) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, value(kv.value)]));

export function decodeOtlpJson(body: ExportTraceServiceRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const service = String(attrs(rs.resource?.attributes)['service.name'] ?? 'unknown');
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        if (!/^[0-9a-f]{32}$/.test(s.traceId) || !/^[0-9a-f]{16}$/.test(s.spanId)) throw new Error(`not OTLP JSON hex ids: ${s.traceId} ${s.spanId}`);
        out.push({
          service,
          scope: ss.scope?.name ?? '',
          traceId: s.traceId,
          spanId: s.spanId,
          ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
          name: s.name,
          kind: s.kind ?? 0,
          startNs: BigInt(s.startTimeUnixNano),
          endNs: BigInt(s.endTimeUnixNano),
          attributes: attrs(s.attributes),
          statusCode: s.status?.code ?? 0,
        });
      }
    }
  }
  return out;
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly errors: string[] = [];
  private server?: Server;

  constructor(readonly port: number) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
          this.errors.push(`content-type ${req.headers['content-type']}`);
          res.writeHead(415).end();
          return;
        }
        try {
          this.spans.push(...decodeOtlpJson(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportTraceServiceRequest));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } catch (e) {
          this.errors.push(String(e));
          res.writeHead(400).end();
        }
      });
    });
    return new Promise((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  /** Waits until the trace holds a span of every name (the services export in batches). */
  async waitFor(traceId: string, names: string[], timeoutMs = 20_000): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const spans = this.trace(traceId);
      if (names.every((n) => spans.some((s) => s.name === n))) return spans;
      if (Date.now() > deadline) {
        throw new Error(`trace ${traceId} holds [${spans.map((s) => `${s.service}:${s.name}`).join(', ')}]; missing ${names.filter((n) => !spans.some((s) => s.name === n)).join(', ')}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** The trace as an indented tree (`service  name  ms  key attributes`), children in start order. */
export function renderTree(spans: ReceivedSpan[], keys: string[] = []): string {
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string | undefined, ReceivedSpan[]>();
  for (const s of spans) {
    const parent = s.parentSpanId && ids.has(s.parentSpanId) ? s.parentSpanId : undefined;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of (children.get(parent) ?? []).sort((a, b) => (a.startNs < b.startNs ? -1 : 1))) {
      const ms = Number(s.endNs - s.startNs) / 1e6;
      const extra = keys.filter((k) => s.attributes[k] !== undefined && s.attributes[k] !== '').map((k) => `${k}=${s.attributes[k]}`);
      lines.push(`${'  '.repeat(depth)}${s.name}  [${s.service}]  ${ms.toFixed(1)} ms${extra.length ? '  ' + extra.join(' ') : ''}`);
      walk(s.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines.join('\n');
}
