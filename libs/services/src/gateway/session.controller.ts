import { Controller, Get, Inject, Req } from '@nestjs/common';
import type { Request } from 'express';
import type { AppConfig } from '@rag/platform';
import { CONFIG } from '../core/tokens';
import { principalOf, RequireScope } from './auth.guard';

/**
 * Who the caller is: tenant, scopes and the kind of credential. The console asks once per key to show only the pages
 * the key can use (the API still enforces every scope); also the trace link template (RAG_TRACE_URL_TEMPLATE).
 */
@Controller('v1/session')
@RequireScope('query', 'ingest', 'admin')
export class SessionController {
  constructor(@Inject(CONFIG) private readonly config: AppConfig) {}

  @Get()
  whoami(@Req() req: Request) {
    const who = principalOf(req);
    return {
      tenant: who.tenant,
      scopes: who.scopes,
      kind: who.kind,
      key_id: who.keyId,
      restricted: who.principals !== undefined,
      trace_url_template: this.config.RAG_TRACE_URL_TEMPLATE ?? null,
    };
  }
}
