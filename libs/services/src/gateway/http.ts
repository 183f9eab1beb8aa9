import type { INestApplication } from '@nestjs/common';
import { SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import express, { type NextFunction, type Request, type Response } from 'express';
import { type AppConfig, metrics } from '@rag/platform';
import { HttpErrorFilter } from './http-error.filter';
import { buildOpenApi } from './openapi';

/**
 * HTTP concerns of the gateway: body limits (JSON bodies may carry base64 documents, so their limit is the
 * document limit plus base64 overhead), the error filter, request metrics and the OpenAPI page at /docs.
 */
export function configureHttp(app: INestApplication, config: AppConfig, version: string): void {
  const jsonLimit = Math.ceil(config.RAG_MAX_BODY_BYTES * 1.4) + 64 * 1024;
  // Webhooks are verified over their exact bytes (HMAC of the raw body), so they stay a Buffer (sources: webhooks.controller.ts).
  app.use('/v1/webhooks', express.raw({ type: () => true, limit: '1mb' }));
  app.use(express.json({ limit: jsonLimit, type: ['application/json', 'application/*+json'] }));
  app.use(express.urlencoded({ extended: false, limit: '1mb' }));
  // body-parser failures are answered here, before routing, in the API's error format.
  app.use((err: { type?: string; message?: string } | undefined, _req: Request, res: Response, next: NextFunction) => {
    if (err?.type === 'entity.parse.failed') {
      res.status(400).json({ error: { code: 'invalid_request', message: `malformed JSON body: ${err.message ?? ''}` } });
    } else if (err?.type === 'entity.too.large') {
      res.status(413).json({ error: { code: 'payload_too_large', message: `request body is larger than the limit of ${jsonLimit} bytes` } });
    } else next(err);
  });
  app.use((req: Request, res: Response, next: NextFunction) => {
    res.on('finish', () => {
      const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
      metrics.httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  });
  app.useGlobalFilters(new HttpErrorFilter());
  SwaggerModule.setup('docs', app, buildOpenApi(version) as unknown as OpenAPIObject, { jsonDocumentUrl: 'docs/openapi.json' });
}
