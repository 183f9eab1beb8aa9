import { randomUUID } from 'node:crypto';
import { Topic, type IndexEvent } from '@rag/contracts';
import type { Bus } from '@rag/ports';
import { nowIso } from './validate';

type StatusFields = Pick<IndexEvent, 'document_id' | 'tenant' | 'version' | 'status' | 'stage'> &
  Partial<Pick<IndexEvent, 'content_hash' | 'chunks' | 'error'>>;

/** Publishes a status change of a document on `rag.index.events.v1`. */
export async function publishStatus(bus: Bus, fields: StatusFields): Promise<void> {
  const event: IndexEvent = { event_id: randomUUID(), at: nowIso(), ...fields };
  await bus.publish(Topic.IndexEvents, [{ key: fields.document_id, value: event }]);
}
