import { createHash, randomUUID } from 'node:crypto';
import {
  DocumentInputSchema,
  Topic,
  type DocumentInput,
  type SourceEvent,
} from '@rag/contracts';
import { detectMimeType, SUPPORTED_MIME_TYPES } from '@rag/domain';
import { AppError, type Result, err, ok } from '@rag/platform';
import type { Bus, DocumentRecord, Registry } from '@rag/ports';
import { nowIso } from './validate';

export interface AcceptedDocument {
  document_id: string;
  version: number;
  status: DocumentRecord['status'];
  /** True when identical content was already accepted: nothing was queued. */
  unchanged?: boolean;
}

export interface UploadedFile {
  buffer: Buffer;
  originalname?: string;
  mimetype?: string;
}

/** A document's public view (the API's GET /v1/documents/{id}). */
export function documentView(r: DocumentRecord) {
  return {
    document_id: r.document_id,
    tenant: r.tenant,
    title: r.title,
    status: r.status,
    version: r.version,
    active_version: r.active_version,
    content_hash: r.content_hash,
    chunks: r.chunks,
    ...(r.error ? { error: r.error } : {}),
    mime_type: r.mime_type,
    source_url: r.source_url,
    metadata: r.metadata,
    acl: r.acl,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/**
 * Accepts documents at the edge (gateway, CLI): validates, detects the type, reserves a version in the registry
 * and queues a source event keyed by document id. Identical re-submissions are answered without queuing.
 */
export class DocumentService {
  constructor(
    private readonly registry: Registry,
    private readonly bus: Bus,
    private readonly maxBytes: number,
  ) {}

  /** Validates a JSON document body; errors are values with a clear message. */
  validate(body: unknown): Result<DocumentInput, AppError> {
    const r = DocumentInputSchema.safeParse(body);
    if (!r.success) {
      return err(
        new AppError(
          'invalid_request',
          r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
          r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
        ),
      );
    }
    return ok(r.data);
  }

  async submit(input: DocumentInput, tenant: string, file?: UploadedFile): Promise<Result<AcceptedDocument, AppError>> {
    const bytes = file ? file.buffer : input.text !== undefined ? Buffer.from(input.text, 'utf8') : Buffer.from(input.content_base64 ?? '', 'base64');
    if (bytes.length === 0) return err(new AppError('invalid_request', 'the document is empty'));
    if (bytes.length > this.maxBytes) {
      return err(new AppError('payload_too_large', `the document is ${bytes.length} bytes; the limit is ${this.maxBytes}`));
    }
    const declared = input.mime_type ?? file?.mimetype ?? (input.text !== undefined ? 'text/plain' : undefined);
    const mime = detectMimeType(file?.originalname ?? input.title, bytes, declared === 'application/octet-stream' ? undefined : declared);
    if (!mime || !SUPPORTED_MIME_TYPES.includes(mime) || mime === 'application/x-ndjson') {
      return err(
        new AppError(
          'unsupported_media_type',
          `unsupported document type ${declared ?? mime ?? 'unknown'}; supported: ${SUPPORTED_MIME_TYPES.filter((m) => m !== 'application/x-ndjson').join(', ')}`,
        ),
      );
    }
    const documentId = input.id ?? `upload:${randomUUID()}`;
    const existing = await this.registry.get(documentId);
    if (existing && existing.tenant !== tenant) {
      return err(new AppError('conflict', `document ${documentId} belongs to another tenant`));
    }
    const rawHash = createHash('sha256')
      .update(bytes)
      .update('\0' + JSON.stringify([input.title ?? null, input.metadata ?? {}, input.acl ?? null, mime]))
      .digest('hex');
    if (existing && existing.raw_hash === rawHash && existing.status !== 'deleted' && existing.status !== 'failed') {
      return ok({ document_id: documentId, version: existing.version, status: existing.status, unchanged: true });
    }
    const title = input.title ?? file?.originalname;
    const record = await this.registry.accept({
      document_id: documentId,
      tenant,
      op: 'upsert',
      title,
      raw_hash: rawHash,
      mime_type: mime,
      source_url: input.source,
      acl: input.acl ?? ['*'],
      metadata: input.metadata ?? {},
    });
    const event: SourceEvent = {
      event_id: randomUUID(),
      op: 'upsert',
      document_id: documentId,
      tenant,
      version: record.version,
      emitted_at: nowIso(),
      ...(title !== undefined ? { title } : {}),
      mime_type: mime,
      content_base64: bytes.toString('base64'),
      source: { kind: 'upload', ...(file?.originalname ? { ref: file.originalname } : {}) },
      ...(input.source !== undefined ? { source_url: input.source } : {}),
      acl: input.acl ?? ['*'],
      metadata: input.metadata ?? {},
    };
    await this.bus.publish(Topic.SourceEvents, [{ key: documentId, value: event }]);
    return ok({ document_id: documentId, version: record.version, status: record.status });
  }

  async delete(documentId: string, tenant: string): Promise<Result<AcceptedDocument, AppError>> {
    const existing = await this.registry.get(documentId);
    if (!existing || existing.tenant !== tenant) return err(new AppError('not_found', `document ${documentId} not found`));
    if (existing.status === 'deleted') return ok({ document_id: documentId, version: existing.version, status: 'deleted' });
    const record = await this.registry.accept({ document_id: documentId, tenant, op: 'delete' });
    const event: SourceEvent = {
      event_id: randomUUID(),
      op: 'delete',
      document_id: documentId,
      tenant,
      version: record.version,
      emitted_at: nowIso(),
    };
    await this.bus.publish(Topic.SourceEvents, [{ key: documentId, value: event }]);
    return ok({ document_id: documentId, version: record.version, status: record.status });
  }

  list(opts: { tenant: string; status?: DocumentRecord['status']; limit: number; offset: number }): Promise<DocumentRecord[]> {
    return this.registry.list(opts);
  }

  counts(tenant: string): Promise<Record<DocumentRecord['status'], number>> {
    return this.registry.countByStatus(tenant);
  }

  async get(documentId: string, tenant: string): Promise<DocumentRecord | null> {
    const r = await this.registry.get(documentId);
    return r && r.tenant === tenant ? r : null;
  }
}
