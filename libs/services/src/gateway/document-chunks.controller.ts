import { Controller, Get, Inject, Optional, Param, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { z } from 'zod';
import { DocumentService, listDocumentChunks } from '@rag/application';
import { AppError, invalidRequest } from '@rag/platform';
import { KEYWORD_INDEX, type KeywordIndex } from '@rag/ports';
import { principalOf, RequireScope } from './auth.guard';

const PageSchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  })
  .strict();

/**
 * `GET /v1/documents/{id}/chunks`: the chunks of the document's active version (ordinal, parent/child, heading path,
 * text), paged — the `ingest` scope, tenant-wide like the other document routes. The chunks come from the keyword
 * index, so the route answers where the gateway runs with the stores (the embedded platform); a gateway process
 * without them answers 503.
 */
@Controller('v1')
@RequireScope('ingest')
export class DocumentChunksController {
  constructor(
    private readonly documents: DocumentService,
    @Optional() @Inject(KEYWORD_INDEX) private readonly keywords?: KeywordIndex,
  ) {}

  @Get('documents/:id/chunks')
  async chunks(@Req() req: Request, @Param('id') id: string, @Query() query: unknown) {
    const who = principalOf(req);
    const page = PageSchema.safeParse(query ?? {});
    if (!page.success) throw invalidRequest(page.error.issues, 'query');
    const doc = await this.documents.get(id, who.tenant);
    if (!doc) throw new AppError('not_found', `document ${id} not found`);
    if (!this.keywords) throw new AppError('unavailable', 'this gateway process has no keyword index to read chunks from (the embedded platform serves this route)');
    const r = await listDocumentChunks(this.keywords, doc, who.tenant, page.data);
    return { document_id: doc.document_id, status: doc.status, version: doc.version, active_version: r.version, total: r.total, offset: page.data.offset, chunks: r.chunks };
  }
}
