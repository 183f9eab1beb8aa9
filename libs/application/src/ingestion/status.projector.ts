import { IndexEventSchema, type IndexEvent } from '@rag/contracts';
import type { BatchOutcome, BusMessage, Registry, StatusUpdate } from '@rag/ports';
import { runParts } from './batch';
import { parseMessage } from './validate';

/** Projects status events from every stage onto the registry (idempotent: the registry ignores stale versions). */
export class StatusProjector {
  constructor(private readonly registry: Registry) {}

  async handle(msg: BusMessage): Promise<void> {
    await this.apply([toUpdate(parseMessage(IndexEventSchema, msg.value, 'index event'))]);
  }

  /**
   * A batch of status events (the bus's batch path: distinct documents per call on Kafka and on the embedded log) in
   * one registry transaction where the registry has `markMany`: on the embedded log every event used to cost its own
   * UPDATE commit plus an offset commit (≈ 7 % of the saturated main thread in a hashing ingestion's profile). An
   * invalid event fails alone (dead-lettered with its reason); a failed transaction fails the batch, whose messages
   * the bus then delivers one by one.
   */
  handleBatch(msgs: BusMessage[]): Promise<BatchOutcome[]> {
    // A foreign producer might put two events of one document in a batch: parts keep them in order.
    return runParts('registry', 'registry', msgs, { schema: IndexEventSchema, what: 'index event', documentIdOf: (e) => e.document_id }, (part) =>
      this.apply(part.map((p) => toUpdate(p.event))),
    );
  }

  private async apply(updates: StatusUpdate[]): Promise<void> {
    if (this.registry.markMany) return this.registry.markMany(updates);
    for (const u of updates) {
      switch (u.status) {
        case 'processing':
          await this.registry.markProcessing(u.documentId, u.version);
          break;
        case 'failed':
          await this.registry.markFailed(u.documentId, u.version, u.error);
          break;
        case 'indexed':
          await this.registry.markIndexed(u.documentId, u.version, u.contentHash, u.chunks);
          break;
        case 'unchanged':
          await this.registry.markUnchanged(u.documentId, u.version);
          break;
        case 'deleted':
          await this.registry.markDeleted(u.documentId, u.version);
          break;
      }
    }
  }
}

/** The registry update an event asks for (a failure's reason names the stage). */
function toUpdate(e: IndexEvent): StatusUpdate {
  const key = { documentId: e.document_id, version: e.version };
  switch (e.status) {
    case 'failed':
      return { status: 'failed', ...key, error: `${e.stage}: ${e.error ?? 'unknown error'}` };
    case 'indexed':
      return { status: 'indexed', ...key, contentHash: e.content_hash ?? '', chunks: e.chunks ?? 0 };
    default:
      return { status: e.status, ...key };
  }
}
