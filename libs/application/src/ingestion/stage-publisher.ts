import { randomUUID } from 'node:crypto';
import { Topic, type IndexEvent } from '@rag/contracts';
import type { Bus } from '@rag/ports';
import { nowIso } from './validate';

type StatusFields = Pick<IndexEvent, 'document_id' | 'tenant' | 'version' | 'status' | 'stage'> &
  Partial<Pick<IndexEvent, 'content_hash' | 'chunks' | 'error'>>;

/** A status change of a document as its `rag.index.events.v1` message. */
export function statusMessage(fields: StatusFields): { key: string; value: IndexEvent } {
  return { key: fields.document_id, value: { event_id: randomUUID(), at: nowIso(), ...fields } };
}

/** Publishes a status change of a document on `rag.index.events.v1`. */
export async function publishStatus(bus: Bus, fields: StatusFields): Promise<void> {
  await bus.publish(Topic.IndexEvents, [statusMessage(fields)]);
}
