import { context, propagation, trace } from '@opentelemetry/api';
import { activeTraceId, extractTraceContext, inSpan, inStage, startTracing, traceExporterFromEnv, traceHeaders } from './tracing';
import { metricsRegistry } from './metrics';

describe('tracing configuration', () => {
  it('exports OTLP only when asked (or when an endpoint is set), and fails fast on what it cannot do', () => {
    expect(traceExporterFromEnv({})).toBe('none');
    expect(traceExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe('otlp');
    expect(traceExporterFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe('otlp');
    expect(traceExporterFromEnv({ OTEL_TRACES_EXPORTER: 'console' })).toBe('console');
    expect(traceExporterFromEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318' })).toBe('none');
    expect(() => traceExporterFromEnv({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/zipkin is not supported/);
    expect(() => traceExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/http\/json/);
    expect(() => traceExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(/not a URL/);
  });
});

describe('tracing without an exporter (the default)', () => {
  // This file's process: the SDK as every main starts it with no OTEL_* settings.
  const handle = startTracing('unit', { env: {} });

  it('records nothing but still generates and propagates real trace ids', async () => {
    expect(handle).toMatchObject({ serviceName: 'rag-unit', exporter: 'none', recording: false });
    expect(activeTraceId()).toBeUndefined();
    let outer = '';
    let headers: Record<string, string> = {};
    await inSpan('outer', {}, async (span) => {
      expect(span.isRecording()).toBe(false);
      outer = activeTraceId()!;
      headers = traceHeaders();
    });
    expect(outer).toMatch(/^[0-9a-f]{32}$/);
    expect(headers.traceparent).toMatch(new RegExp(`^00-${outer}-[0-9a-f]{16}-00$`));
    // A consumer continues the trace from the headers.
    const remote = extractTraceContext(headers);
    const inner = await inSpan('inner', {}, async () => activeTraceId(), { parent: remote });
    expect(inner).toBe(outer);
    expect(trace.getSpanContext(context.active())).toBeUndefined();
    expect(propagation.fields()).toContain('traceparent');
  });

  it('times a stage into rag_stage_duration_seconds even when spans are not recorded, and rethrows failures', async () => {
    await expect(inStage('fuse', {}, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const text = await metricsRegistry.metrics();
    expect(text).toMatch(/rag_stage_duration_seconds_count\{stage="fuse"\} 1/);
  });
});
