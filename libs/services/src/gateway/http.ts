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
  app.use(express.json({ limit: jsonLimit, type: ['application/json', 'application/*+json'] }));
  app.use(express.urlencoded({ extended: false, limit: '1mb' }));
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
