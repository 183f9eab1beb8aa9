import { IndexEventSchema } from '@rag/contracts';
import type { BusMessage, Registry } from '@rag/ports';
import { parseMessage } from './validate';

/** Projects status events from every stage onto the registry (idempotent: the registry ignores stale versions). */
export class StatusProjector {
  constructor(private readonly registry: Registry) {}

  async handle(msg: BusMessage): Promise<void> {
    const e = parseMessage(IndexEventSchema, msg.value, 'index event');
    switch (e.status) {
      case 'processing':
        return this.registry.markProcessing(e.document_id, e.version);
      case 'failed':
        return this.registry.markFailed(e.document_id, e.version, `${e.stage}: ${e.error ?? 'unknown error'}`);
      case 'indexed':
        return this.registry.markIndexed(e.document_id, e.version, e.content_hash ?? '', e.chunks ?? 0);
      case 'unchanged':
        return this.registry.markUnchanged(e.document_id, e.version);
      case 'deleted':
        return this.registry.markDeleted(e.document_id, e.version);
    }
  }
}
