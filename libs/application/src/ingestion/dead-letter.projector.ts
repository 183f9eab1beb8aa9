import { DLQ_HEADERS, messageVersion } from '@rag/contracts';
import { Logger } from '@rag/platform';
import type { BusMessage, Registry } from '@rag/ports';

/**
 * Consumes rag.dlq.v1 and marks the document of each dead-lettered message `failed` with the stage and reason from
 * the headers, so a poison message or an outage longer than the retry budget shows up in GET /v1/documents/{id}
 * instead of leaving the document `processing` forever. It only touches the version the message was about (the
 * registry ignores stale versions), and it never throws: a DLQ consumer that failed would dead-letter its own input.
 */
export class DeadLetterProjector {
  private readonly log = new Logger('dead-letter-projector');
  constructor(private readonly registry: Registry) {}

  async handle(msg: BusMessage): Promise<void> {
    try {
      const version = messageVersion(msg.value);
      if (!msg.key || version === undefined) return; // not about a known document version (e.g. a forged message)
      const record = await this.registry.get(msg.key);
      if (!record || record.version !== version) return;
      if (record.status === 'indexed' || record.status === 'deleted') return; // a redelivered duplicate of finished work
      const stage = msg.headers[DLQ_HEADERS.stage] ?? 'unknown stage';
      const reason = msg.headers[DLQ_HEADERS.reason] ?? 'dead-lettered';
      await this.registry.markFailed(msg.key, version, `${stage}: ${reason}`);
    } catch (e) {
      this.log.warn('could not project a dead-lettered message', { key: msg.key, error: String(e) });
    }
  }
}
