import { randomUUID } from 'node:crypto';
import {
  SourceEventSchema,
  Topic,
  type DocumentEvent,
  type SourceEvent,
  type StructuredDocument,
} from '@rag/contracts';
import { contentHash, loadContent } from '@rag/domain';
import { Logger } from '@rag/platform';
import type { Bus, BusMessage } from '@rag/ports';
import { publishStatus } from './stage-publisher';
import { parseMessage } from './validate';

/** Turns a source event into a structured document (or a `failed` status with the reason). */
export class LoaderStage {
  private readonly log = new Logger('loader');
  constructor(private readonly bus: Bus) {}

  async handle(msg: BusMessage): Promise<void> {
    const event = parseMessage(SourceEventSchema, msg.value, 'source event');
    if (event.op === 'delete') {
      const out: DocumentEvent = { ...event, event_id: randomUUID() };
      await this.bus.publish(Topic.Documents, [{ key: event.document_id, value: out }]);
      return;
    }
    await publishStatus(this.bus, { document_id: event.document_id, tenant: event.tenant, version: event.version, status: 'processing', stage: 'loader' });
    const doc = await this.load(event);
    if (!doc.ok) {
      this.log.warn('document failed to load', { document_id: event.document_id, version: event.version, reason: doc.reason });
      await publishStatus(this.bus, {
        document_id: event.document_id,
        tenant: event.tenant,
        version: event.version,
        status: 'failed',
        stage: 'loader',
        error: doc.reason,
      });
      return;
    }
    const out: DocumentEvent = { event_id: randomUUID(), op: 'upsert', document: doc.document };
    await this.bus.publish(Topic.Documents, [{ key: event.document_id, value: out }]);
  }

  private async load(
    event: Extract<SourceEvent, { op: 'upsert' }>,
  ): Promise<{ ok: true; document: StructuredDocument } | { ok: false; reason: string }> {
    if (event.content_base64 === undefined && event.text === undefined) {
      return { ok: false, reason: `no connector is configured for source kind "${event.source.kind}"` };
    }
    const bytes = event.text !== undefined ? Buffer.from(event.text, 'utf8') : Buffer.from(event.content_base64 ?? '', 'base64');
    const loaded = await loadContent({ bytes, mimeType: event.mime_type, title: event.title, filename: event.source.ref });
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
}
