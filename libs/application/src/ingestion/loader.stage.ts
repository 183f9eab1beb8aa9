import { randomUUID } from 'node:crypto';
import {
  MetadataSchema,
  SourceEventSchema,
  Topic,
  type DocumentEvent,
  type IndexEvent,
  type SourceEvent,
  type StructuredDocument,
} from '@rag/contracts';
import { contentHash, DEFAULT_PARSE_LIMITS, loadContent, type BinaryParsers, type ParseLimits } from '@rag/domain';
import { Logger, setSpanAttributes, withTraceContext } from '@rag/platform';
import type { BatchOutcome, Bus, BusMessage, DocumentParser, OutgoingMessage, ParseOutcome, ParseRequest } from '@rag/ports';
import { AppError } from '@rag/platform';
import type { SourceConnector } from '@rag/ports';
import { asError, handleAlone, publishEach, runParts, type BatchItem } from './batch';
import { statusMessage } from './stage-publisher';

/** Source errors that retrying will not fix (bad credentials, no access, a malformed request): a `failed` status. */
const PERMANENT = new Set(['unauthorized', 'forbidden', 'invalid_request', 'not_found']);

/** Documents of a batch parsed (or fetched from their source) at the same time. */
const LOAD_CONCURRENCY = 8;

type Loaded = { ok: true; document: StructuredDocument } | { ok: false; reason: string } | { ok: 'gone'; reason: string };

/**
 * Parses on the caller's thread, within the same parse limits but without a time or memory limit (a stuck parse cannot
 * be stopped here). For tests and tools that build a LoaderStage without a parser; services wire the worker pool
 * (libs/adapters worker-parser) instead. PDF and DOCX need `binary` (libs/adapters document-parsers `BINARY_PARSERS`,
 * which this layer cannot import); without it they come back `unsupported_media_type`.
 */
export class InProcessDocumentParser implements DocumentParser {
  constructor(
    private readonly limits: ParseLimits = DEFAULT_PARSE_LIMITS,
    private readonly binary: BinaryParsers = {},
  ) {}
  async parse(request: ParseRequest): Promise<ParseOutcome> {
    const bytes = Buffer.from(request.bytes.buffer, request.bytes.byteOffset, request.bytes.byteLength);
    const r = await loadContent({ bytes, mimeType: request.mimeType, title: request.title, filename: request.filename }, this.limits, this.binary);
    if (r.ok) return r;
    return { ok: false, code: r.code, reason: r.reason };
  }
  async close(): Promise<void> {}
}

/**
 * Turns a source event into a structured document (or a `failed` status with the reason). Uploads carry their
 * content inline; Confluence/Notion events carry a page reference and the connector of that kind fetches the page's
 * current state. A page gone at the source becomes a delete of the event's version, so it leaves every store.
 */
export class LoaderStage {
  private readonly log = new Logger('loader');
  private readonly connectors: Map<string, SourceConnector>;
  constructor(
    private readonly bus: Bus,
    connectors: SourceConnector[] = [],
    private readonly parser: DocumentParser = new InProcessDocumentParser(),
  ) {
    this.connectors = new Map(connectors.map((c) => [c.kind, c]));
  }

  /** One message (tests, tools): the batch path with a batch of one. */
  async handle(msg: BusMessage): Promise<void> {
    return handleAlone((m) => this.handleBatch(m), msg);
  }

  /**
   * Several source events at once (bulk ingestion, issue 13 item 6), outcomes in message order: one publish of the
   * `processing` statuses, the documents parsed (and pages fetched) a few at a time (the parser is a worker pool),
   * then one publish of the structured documents and one of the `failed` statuses. Each document keeps its order
   * (`processing` before its document or its `failed`). An invalid event fails alone (dead-lettered with its reason); a
   * transient failure (a connector's 5xx) fails only its document, which the bus delivers again alone.
   */
  handleBatch(msgs: BusMessage[]): Promise<BatchOutcome[]> {
    return runParts('load', 'loader', msgs, { schema: SourceEventSchema, what: 'source event', documentIdOf: (e) => e.document_id }, (part) => this.loadPart(part));
  }

  private async loadPart(part: { item: BatchItem; event: SourceEvent }[]): Promise<void> {
    for (const { item, event } of part) {
      item.span.setAttributes({ 'rag.tenant': event.tenant, 'rag.document_id': event.document_id, 'rag.version': event.version, 'rag.op': event.op });
      if (event.op === 'upsert') item.span.setAttributes({ 'rag.mime_type': event.mime_type, 'rag.source.kind': event.source.kind });
    }
    const processing = part.flatMap(({ item, event }) =>
      event.op === 'upsert' ? [{ item, message: statusMessage({ document_id: event.document_id, tenant: event.tenant, version: event.version, status: 'processing', stage: 'loader' }) }] : [],
    );
    await publishEach(this.bus, Topic.IndexEvents, processing);
    const documents: { item: BatchItem; message: OutgoingMessage<DocumentEvent> }[] = [];
    const failed: { item: BatchItem; message: OutgoingMessage<IndexEvent> }[] = [];
    const queue = part.filter((p) => !p.item.failed);
    const worker = async (): Promise<void> => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const { item, event } = next;
        try {
          const out = await withTraceContext(item.context, () => this.outcome(event));
          if ('document' in out) documents.push({ item, message: { key: event.document_id, value: out.document } });
          else failed.push({ item, message: statusMessage({ document_id: event.document_id, tenant: event.tenant, version: event.version, status: 'failed', stage: 'loader', error: out.failed }) });
        } catch (e) {
          item.failed = asError(e);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(LOAD_CONCURRENCY, queue.length) }, worker));
    await publishEach(this.bus, Topic.Documents, documents);
    await publishEach(this.bus, Topic.IndexEvents, failed);
  }

  /** What one source event becomes: the document event to publish, or the reason it failed (a `failed` status). */
  private async outcome(event: SourceEvent): Promise<{ document: DocumentEvent } | { failed: string }> {
    if (event.op === 'delete') return { document: { ...event, event_id: randomUUID() } };
    const doc = await this.load(event);
    if (doc.ok === 'gone') {
      this.log.info('page gone at the source: deleting', { document_id: event.document_id, version: event.version, reason: doc.reason });
      return { document: { event_id: randomUUID(), op: 'delete', document_id: event.document_id, tenant: event.tenant, version: event.version } };
    }
    if (!doc.ok) {
      setSpanAttributes({ 'rag.outcome': 'failed' });
      this.log.warn('document failed to load', { document_id: event.document_id, version: event.version, reason: doc.reason });
      return { failed: doc.reason };
    }
    setSpanAttributes({ 'rag.blocks': doc.document.blocks.length });
    return { document: { event_id: randomUUID(), op: 'upsert', document: doc.document } };
  }

  private async load(event: Extract<SourceEvent, { op: 'upsert' }>): Promise<Loaded> {
    if (event.content_base64 === undefined && event.text === undefined) {
      const connector = this.connectors.get(event.source.kind);
      if (!connector) return { ok: false, reason: `no connector is configured for source kind "${event.source.kind}"` };
      if (!event.source.ref) return { ok: false, reason: `a ${event.source.kind} event needs source.ref (the page id)` };
      return this.fetch(connector, event, event.source.ref);
    }
    const bytes = event.text !== undefined ? Buffer.from(event.text, 'utf8') : Buffer.from(event.content_base64 ?? '', 'base64');
    const loaded = await this.parser.parse({ bytes, mimeType: event.mime_type, title: event.title, filename: event.source.ref });
    if (!loaded.ok) return { ok: false, reason: `${loaded.code}: ${loaded.reason}` };
    return {
      ok: true,
      document: {
        document_id: event.document_id,
        tenant: event.tenant,
        version: event.version,
        title: loaded.title.slice(0, 1024),
        ...(event.source_url !== undefined ? { source_url: event.source_url } : {}),
        mime_type: event.mime_type,
        content_hash: contentHash(loaded.blocks),
        acl: event.acl,
        metadata: event.metadata,
        blocks: loaded.blocks,
        ...(loaded.pages !== undefined ? { pages: loaded.pages } : {}),
      },
    };
  }

  private async fetch(connector: SourceConnector, event: Extract<SourceEvent, { op: 'upsert' }>, ref: string): Promise<Loaded> {
    let page;
    try {
      page = await connector.fetch(ref);
    } catch (e) {
      // transient (rate limited past the backoff budget, 5xx, network): throw so the bus retries, then the DLQ
      if (e instanceof AppError && PERMANENT.has(e.code)) return { ok: false, reason: `${connector.kind}: ${e.message}` };
      throw e;
    }
    if (page.status === 'gone') return { ok: 'gone', reason: page.reason };
    const title = (page.title || event.title || `${connector.kind} page ${ref}`).slice(0, 1024);
    const sourceUrl = page.source_url ?? event.source_url;
    // each part is within the caps; together they may not be (the document event would then be dead-lettered)
    const metadata = MetadataSchema.safeParse({ ...event.metadata, ...page.metadata });
    if (!metadata.success) return { ok: false, reason: `invalid_metadata: ${metadata.error.issues.map((i) => i.message).join('; ')}` };
    return {
      ok: true,
      document: {
        document_id: event.document_id,
        tenant: event.tenant,
        version: event.version,
        title,
        ...(sourceUrl !== undefined ? { source_url: sourceUrl.slice(0, 2048) } : {}),
        mime_type: event.mime_type,
        content_hash: contentHash(page.blocks),
        acl: page.acl,
        metadata: metadata.data,
        blocks: page.blocks,
      },
    };
  }
}
