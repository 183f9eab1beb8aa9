import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, UploadedFile, UseInterceptors } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import type { Request } from 'express';
import { z } from 'zod';
import { DocumentService, documentView, type UploadedFile as Upload } from '@rag/application';
import { AclSchema, BatchInputSchema, DocumentInputSchema, DocumentStatusSchema, MetadataSchema, type DocumentInput } from '@rag/contracts';
import { decodeListCursor, encodeListCursor } from '@rag/domain';
import { AppError, invalidRequest } from '@rag/platform';
import { principalOf, RequireScope } from './auth.guard';

const jsonField = <T extends z.ZodType>(schema: T) =>
  z
    .string()
    .transform((s, ctx) => {
      try {
        return JSON.parse(s) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema);

/**
 * Multipart form fields beside `file`: the same field schemas as the JSON body (an `id` with whitespace, `#` or over
 * 512 characters is a 400 here too, not a dead letter later); `metadata` and `acl` arrive as JSON text.
 */
export const MultipartFieldsSchema = z
  .object({
    id: DocumentInputSchema.shape.id,
    title: DocumentInputSchema.shape.title,
    mime_type: DocumentInputSchema.shape.mime_type,
    source: DocumentInputSchema.shape.source,
    metadata: jsonField(MetadataSchema).optional(),
    acl: jsonField(AclSchema).optional(),
  })
  .strict();

/**
 * `GET /v1/documents`: `cursor` (the previous page's `next_cursor`) pages at the same cost at any depth; `offset`
 * stays for compatibility and small lists (it walks every earlier row: ≈ 20 ms at 300k documents in SQLite against
 * 0.2 ms for a cursor, growing with the depth). Not both.
 */
const ListQuerySchema = z
  .object({
    status: DocumentStatusSchema.optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    offset: z.coerce.number().int().min(0).default(0),
    cursor: z
      .string()
      .transform((token, ctx) => {
        const after = decodeListCursor(token);
        if (!after) {
          ctx.addIssue({ code: 'custom', message: 'not a page token of this API: pass the next_cursor of the previous page unchanged' });
          return z.NEVER;
        }
        return after;
      })
      .optional(),
  })
  .refine((q) => !(q.cursor && q.offset > 0), { message: 'use cursor or offset, not both', path: ['offset'] });

const invalid = (issues: z.core.$ZodIssue[]): AppError => invalidRequest(issues);

/** Document management: the `ingest` scope, tenant-wide (titles, metadata and ACLs of every document of the tenant). */
@Controller('v1')
@RequireScope('ingest')
export class DocumentsController {
  constructor(private readonly documents: DocumentService) {}

  @Post('documents')
  @HttpCode(202)
  @UseInterceptors(FileInterceptor('file'))
  async create(@Req() req: Request, @Body() body: unknown, @UploadedFile() file?: { buffer: Buffer; originalname: string; mimetype: string }) {
    const who = principalOf(req);
    if (file) {
      const fields = MultipartFieldsSchema.safeParse(body ?? {});
      if (!fields.success) throw invalid(fields.error.issues);
      const upload: Upload = { buffer: file.buffer, originalname: file.originalname, mimetype: file.mimetype };
      const r = await this.documents.submit(fields.data, who.tenant, upload);
      if (!r.ok) throw r.error;
      return { ...r.value, status: r.value.unchanged ? r.value.status : 'queued' };
    }
    if ((req.headers['content-type'] ?? '').startsWith('multipart/')) {
      throw new AppError('invalid_request', 'multipart upload without a `file` part');
    }
    if (body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0)) {
      throw new AppError('invalid_request', 'empty body: send JSON {text | content_base64, …} or a multipart `file`');
    }
    const v = this.documents.validate(body);
    if (!v.ok) throw v.error;
    const r = await this.documents.submit(v.value, who.tenant);
    if (!r.ok) throw r.error;
    return { ...r.value, status: r.value.unchanged ? r.value.status : 'queued' };
  }

  @Post('documents\\:batch')
  @HttpCode(202)
  async batch(@Req() req: Request, @Body() body: unknown) {
    const who = principalOf(req);
    const parsed = BatchInputSchema.safeParse(body);
    if (!parsed.success) throw invalid(parsed.error.issues);
    const accepted: ({ index: number } & Record<string, unknown>)[] = [];
    const rejected: { index: number; error: { code: string; message: string } }[] = [];
    // Bulk ingestion (issue 13 item 6): the valid documents of a batch are accepted together — one registry read and
    // one registry transaction (with their outbox messages) per request, then one relay round (DocumentService.submitMany).
    const valid: { index: number; input: DocumentInput }[] = [];
    for (const [index, doc] of parsed.data.documents.entries()) {
      const v = this.documents.validate(doc);
      if (v.ok) valid.push({ index, input: v.value });
      else rejected.push({ index, error: { code: v.error.code, message: v.error.message } });
    }
    const results = valid.length ? await this.documents.submitMany(valid.map((v) => ({ input: v.input })), who.tenant) : [];
    results.forEach((r, i) => {
      const index = valid[i]!.index;
      if (r.ok) accepted.push({ index, ...r.value, status: r.value.unchanged ? r.value.status : 'queued' });
      else rejected.push({ index, error: { code: r.error.code, message: r.error.message } });
    });
    rejected.sort((a, b) => a.index - b.index);
    return { accepted, rejected };
  }

  @Get('documents')
  async list(@Req() req: Request, @Query() query: unknown) {
    const who = principalOf(req);
    const q = ListQuerySchema.safeParse(query);
    if (!q.success) throw invalid(q.error.issues);
    const { cursor, offset, ...rest } = q.data;
    const docs = await this.documents.list({ tenant: who.tenant, ...rest, ...(cursor ? { after: cursor } : { offset }) });
    // A full page may have a next one: its token names the last document of this page (null at the end).
    const last = docs.length === rest.limit ? docs[docs.length - 1] : undefined;
    return { documents: docs.map(documentView), counts: await this.documents.counts(who.tenant), next_cursor: last ? encodeListCursor(last) : null };
  }

  @Get('documents/:id')
  async get(@Req() req: Request, @Param('id') id: string) {
    const who = principalOf(req);
    const r = await this.documents.get(id, who.tenant);
    if (!r) throw new AppError('not_found', `document ${id} not found`);
    return documentView(r);
  }

  @Delete('documents/:id')
  @HttpCode(202)
  async remove(@Req() req: Request, @Param('id') id: string) {
    const who = principalOf(req);
    const r = await this.documents.delete(id, who.tenant);
    if (!r.ok) throw r.error;
    return r.value;
  }
}
