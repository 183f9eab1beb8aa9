import type { INestApplication } from '@nestjs/common';
import { SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import express, { type NextFunction, type Request, type Response } from 'express';
import { adoptServerSpan, type AppConfig, extractTraceContext, failSpan, isUntracedHttpPath, metrics, SpanKind, startSpan, withTraceContext, type Span } from '@rag/platform';
import { serveConsole } from './console';
import { HttpErrorFilter } from './http-error.filter';
import { buildOpenApi } from './openapi';

/**
 * HTTP concerns of the gateway: body limits (JSON bodies may carry base64 documents, so their limit is the
 * document limit plus base64 overhead), the error filter, request metrics and the OpenAPI page at /docs.
 */
export function configureHttp(app: INestApplication, config: AppConfig, version: string): void {
  const jsonLimit = Math.ceil(config.RAG_MAX_BODY_BYTES * 1.4) + 64 * 1024;
  // The web console at `/` (static files; hashed assets long-cached) before the span: page and asset loads are not API
  // traffic and stay out of the gateway's traces, request metrics and stage latency.
  serveConsole(app, config);
  // Then, for the API: the request's `gateway` span (and latency), so body parsing, auth and the handler all run inside it.
  app.use(gatewaySpan);
  // Webhooks are verified over their exact bytes (HMAC of the raw body), so they stay a Buffer (sources: webhooks.controller.ts).
  app.use('/v1/webhooks', express.raw({ type: () => true, limit: '1mb' }));
  // JSON and (in the documents route, by multer) multipart only: the API documents no form-urlencoded body, and that
  // is the body an HTML form on any web site can post here, so it is not parsed (a route then sees no body: 400).
  app.use(express.json({ limit: jsonLimit, type: ['application/json', 'application/*+json'] }));
  // body-parser failures are answered here, before routing, in the API's error format.
  app.use((err: { type?: string; message?: string } | undefined, _req: Request, res: Response, next: NextFunction) => {
    if (err?.type === 'entity.parse.failed') {
      res.status(400).json({ error: { code: 'invalid_request', message: `malformed JSON body: ${err.message ?? ''}` } });
    } else if (err?.type === 'entity.too.large') {
      res.status(413).json({ error: { code: 'payload_too_large', message: `request body is larger than the limit of ${jsonLimit} bytes` } });
    } else next(err);
  });
  app.useGlobalFilters(new HttpErrorFilter());
  SwaggerModule.setup('docs', app, buildOpenApi(version) as unknown as OpenAPIObject, { jsonDocumentUrl: 'docs/openapi.json' });
}

/**
 * The request's SERVER span, named `gateway` (the stage label), continuing the caller's W3C trace context when it
 * sends one; it is the active context of everything the request does (so `trace_id` in answers is this trace).
 * The HTTP instrumentation (libs/platform tracing) opens it and extracts the context; this middleware names it and
 * sets the route, status and tenant when it ends. Where the instrumentation did not see the request (the http module
 * was loaded before the SDK started, or the SDK is off) the middleware starts the same span itself. Probes and
 * scrapes (UNTRACED_HTTP_PATHS) get no span. On `finish` (or `close` when the client went away):
 * `rag_http_requests_total`, `rag_http_request_duration_seconds` and the `gateway` stage latency.
 */
function gatewaySpan(req: Request, res: Response, next: NextFunction): void {
  const started = performance.now();
  const traced = !isUntracedHttpPath(req.originalUrl);
  // The route pattern (bounded label values), without Express's escapes (`/v1/documents\\:batch`).
  const routeOf = () => (req.route as { path?: string } | undefined)?.path?.replace(/\\/g, '') ?? 'unmatched';
  const annotate = (span: Span) => {
    const aborted = !res.writableFinished;
    span.updateName('gateway');
    span.setAttributes({ 'http.request.method': req.method, 'url.path': req.path, 'http.route': routeOf(), 'http.response.status_code': res.statusCode });
    const tenant = (req as Request & { principal?: { tenant?: unknown } }).principal?.tenant;
    if (typeof tenant === 'string') span.setAttribute('rag.tenant', tenant);
    if (res.statusCode >= 500 || aborted) failSpan(span, new Error(aborted ? 'client closed the connection' : `HTTP ${res.statusCode}`));
  };
  const own =
    traced && !adoptServerSpan(req, annotate)
      ? startSpan('gateway', { 'http.request.method': req.method, 'url.path': req.path }, { kind: SpanKind.SERVER, parent: extractTraceContext(req.headers) })
      : undefined;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    const route = routeOf();
    const status = res.writableFinished ? String(res.statusCode) : 'aborted';
    const seconds = (performance.now() - started) / 1000;
    metrics.httpRequests.inc({ method: req.method, route, status });
    metrics.httpLatency.observe({ method: req.method, route, status }, seconds);
    if (!traced) return;
    metrics.stageLatency.observe({ stage: 'gateway' }, seconds);
    if (own) {
      annotate(own.span);
      own.span.end();
    }
  };
  res.on('finish', finish);
  res.on('close', finish);
  if (own) withTraceContext(own.context, next);
  else next();
}
