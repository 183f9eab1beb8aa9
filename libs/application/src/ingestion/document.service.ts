import { createHash, randomUUID } from 'node:crypto';
import {
  DocumentInputSchema,
  Topic,
  type DocumentInput,
  type SourceEvent,
} from '@rag/contracts';
import { detectMimeType, documentIdCandidates, externalDocumentId, internalDocumentId, SUPPORTED_MIME_TYPES, uploadDocumentIdProblem } from '@rag/domain';
import { AppError, Logger, type Result, err, invalidRequest, ok } from '@rag/platform';
import { MessageTooLargeError, type AcceptChange, type Bus, type DocumentRecord, type ListOptions, type OutboxEntry, type OutboxMessage, type Registry } from '@rag/ports';
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

export interface DocumentServiceOptions {
  /** How often the outbox relay retries messages that are not yet published, ms (default 2000). */
  relayIntervalMs?: number;
  /** How long a relay's claim on outbox messages holds before another relay may take them, ms (default 60 s). */
  relayLeaseMs?: number;
  /**
   * The most bytes of outbox values (stored JSON) one relay round claims at once, besides {@link RELAY_BATCH} messages;
   * a larger message is claimed alone (default 32 MiB; 0: by count only). Uploads travel inline in their source events
   * (base64, ≈ 34 MB for a 25 MB upload): claimed a hundred at a time, a backlog of them after a bus outage held ≈ 3.4 GB
   * of strings, parsed values and send buffers in the gateway at once.
   */
  relayClaimBytes?: number;
}

/** Outbox messages claimed per round of the relay (at most; see `relayClaimBytes`). */
const RELAY_BATCH = 100;
const DEFAULT_RELAY_CLAIM_BYTES = 32 * 1024 * 1024;

/**
 * Accepts documents at the edge (gateway, CLI): validates, detects the type, reserves a version in the registry
 * and queues a source event keyed by document id. Identical re-submissions are answered without queuing.
 *
 * Ids are scoped by tenant: callers speak external ids, the registry and the bus internal ones
 * (`internalDocumentId`, libs/domain); another tenant's id is a free id. Records stored before ids were scoped (plain
 * ids of non-default tenants) are still found, but only by their own tenant.
 *
 * Submission is atomic (transactional outbox): the registry change and its source event are committed in one
 * transaction, then the relay publishes the event and deletes it from the outbox. A crash or a bus outage between
 * the two delays the event (the relay retries every `relayIntervalMs`, and at start-up) instead of leaving the
 * document `queued` with no message, which a resubmission would have answered as `unchanged`. Delivery is
 * at-least-once; every consumer is idempotent. We chose the outbox over "treat queued-without-message as not
 * accepted" because the latter cannot tell a lost message from one still in flight, and needs a resubmission to heal.
 */
export class DocumentService {
  private readonly log = new Logger('documents');
  private readonly relayIntervalMs: number;
  private readonly relayLeaseMs: number;
  private readonly relayClaimBytes: number;
  private relayChain: Promise<void> = Promise.resolve();
  private relayQueued: Promise<void> | null = null;
  private relayTimer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly registry: Registry,
    private readonly bus: Bus,
    private readonly maxBytes: number,
    opts: DocumentServiceOptions = {},
  ) {
    this.relayIntervalMs = opts.relayIntervalMs ?? 2000;
    this.relayLeaseMs = opts.relayLeaseMs ?? 60_000;
    this.relayClaimBytes = opts.relayClaimBytes ?? DEFAULT_RELAY_CLAIM_BYTES;
  }

  /** Validates a JSON document body; errors are values with a clear message. */
  validate(body: unknown): Result<DocumentInput, AppError> {
    const r = DocumentInputSchema.safeParse(body);
    if (!r.success) {
      return err(invalidRequest(r.error.issues));
    }
    return ok(r.data);
  }

  async submit(input: DocumentInput, tenant: string, file?: UploadedFile): Promise<Result<AcceptedDocument, AppError>> {
    return (await this.submitMany([{ input, file }], tenant))[0]!;
  }

  /**
   * Accepts several documents of one tenant (`POST /v1/documents:batch`; bulk ingestion, issue 13 item 6): the
   * registry is read once for all of them (`getMany`) and every accepted change is written with its outbox message in
   * one registry transaction (`acceptMany`), then one relay round publishes them — a few round trips per request
   * instead of several per document. Outcomes come back in input order, each as `submit` would answer it. An id that
   * repeats is accepted in order (each occurrence gets the next version; a repeat identical to the one before it is
   * `unchanged`). If the one transaction fails on a single change (e.g. a concurrent write of another tenant's id),
   * the changes are accepted one at a time so that only that document is rejected.
   */
  async submitMany(docs: { input: DocumentInput; file?: UploadedFile }[], tenant: string): Promise<Result<AcceptedDocument, AppError>[]> {
    const out: Result<AcceptedDocument, AppError>[] = new Array(docs.length);
    const prepared: { index: number; doc: PreparedDocument }[] = [];
    docs.forEach(({ input, file }, index) => {
      const p = this.prepare(input, file);
      if (p.ok) prepared.push({ index, doc: p.value });
      else out[index] = p;
    });
    let accepted = 0;
    // Parts with distinct external ids, in order: a repeated id is decided against the record its earlier occurrence left.
    for (const part of distinctRuns(prepared, (p) => p.doc.externalId)) {
      const found = await this.findMany(part.map((p) => p.doc.externalId), tenant);
      const changes: { index: number; doc: PreparedDocument; documentId: string }[] = [];
      for (const { index, doc } of part) {
        const f = found.get(doc.externalId);
        if (!f) {
          out[index] = err(new AppError('invalid_request', `id: ${doc.externalId} is not a valid document id`));
          continue;
        }
        const { id: documentId, record: existing } = f;
        if (existing && existing.tenant !== tenant) {
          // Only a record of another tenant stored under a plain id before ids were scoped can get here (the default
          // tenant's ids are plain); every id issued since is qualified and cannot collide.
          out[index] = err(new AppError('conflict', `document ${doc.externalId} cannot be written: its id is held by a record from before ids were scoped by tenant`));
          continue;
        }
        if (existing && existing.raw_hash === doc.rawHash && existing.status !== 'deleted' && existing.status !== 'failed') {
          out[index] = ok({ document_id: doc.externalId, version: existing.version, status: existing.status, unchanged: true });
          continue;
        }
        changes.push({ index, doc, documentId });
      }
      if (changes.length === 0) continue;
      const items = changes.map((c) => this.upsertChange(c.doc, c.documentId, tenant));
      let records: (DocumentRecord | AppError)[];
      try {
        records = this.registry.acceptMany && items.length > 1 ? await this.registry.acceptMany(items) : [await this.registry.accept(items[0]!.change, items[0]!.message)];
        if (records.length !== items.length) records = await this.acceptEach(items);
      } catch (e) {
        if (!(e instanceof AppError) || e.code !== 'conflict') throw e;
        records = await this.acceptEach(items);
      }
      changes.forEach((c, i) => {
        const r = records[i]!;
        if (r instanceof AppError) out[c.index] = err(r);
        else {
          accepted++;
          out[c.index] = ok({ document_id: c.doc.externalId, version: r.version, status: r.status });
        }
      });
    }
    if (accepted > 0) await this.relayNow();
    return out;
  }

  /** `accept` one change at a time (the fallback of a failed batch transaction): a conflict rejects only its document. */
  private async acceptEach(items: { change: AcceptChange; message: (r: DocumentRecord) => OutboxMessage }[]): Promise<(DocumentRecord | AppError)[]> {
    const records: (DocumentRecord | AppError)[] = [];
    for (const item of items) {
      try {
        records.push(await this.registry.accept(item.change, item.message));
      } catch (e) {
        if (e instanceof AppError && e.code === 'conflict') records.push(e);
        else throw e;
      }
    }
    return records;
  }

  /** Everything about a submitted document that needs no registry: size, type, id and the raw hash. */
  private prepare(input: DocumentInput, file?: UploadedFile): Result<PreparedDocument, AppError> {
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
    if (input.id !== undefined) {
      const problem = uploadDocumentIdProblem(input.id);
      if (problem) return err(new AppError('invalid_request', `id: ${problem}`));
    }
    const rawHash = createHash('sha256')
      .update(bytes)
      .update('\0' + JSON.stringify([input.title ?? null, input.metadata ?? {}, input.acl ?? null, mime]))
      .digest('hex');
    return ok({ input, file, bytes, mime, rawHash, externalId: input.id ?? `upload:${randomUUID()}`, title: input.title ?? file?.originalname });
  }

  /** The registry change of an accepted upload and the builder of its source event (stored in the outbox with it). */
  private upsertChange(doc: PreparedDocument, documentId: string, tenant: string): { change: AcceptChange; message: (r: DocumentRecord) => OutboxMessage } {
    const { input, file, bytes, mime, title } = doc;
    return {
      change: {
        document_id: documentId,
        tenant,
        op: 'upsert',
        title,
        raw_hash: doc.rawHash,
        mime_type: mime,
        source_url: input.source,
        acl: input.acl ?? ['*'],
        metadata: input.metadata ?? {},
      },
      message: (r) => {
        const event: SourceEvent = {
          event_id: randomUUID(),
          op: 'upsert',
          document_id: documentId,
          tenant,
          version: r.version,
          emitted_at: nowIso(),
          ...(title !== undefined ? { title } : {}),
          mime_type: mime,
          content_base64: bytes.toString('base64'),
          source: { kind: 'upload', ...(file?.originalname ? { ref: file.originalname } : {}) },
          ...(input.source !== undefined ? { source_url: input.source } : {}),
          acl: input.acl ?? ['*'],
          metadata: input.metadata ?? {},
        };
        return { topic: Topic.SourceEvents, key: documentId, value: event };
      },
    };
  }

  async delete(externalId: string, tenant: string): Promise<Result<AcceptedDocument, AppError>> {
    const found = await this.find(externalId, tenant);
    const existing = found?.record;
    if (!found || !existing || existing.tenant !== tenant) return err(new AppError('not_found', `document ${externalId} not found`));
    if (existing.status === 'deleted') return ok({ document_id: externalId, version: existing.version, status: 'deleted' });
    const documentId = found.id;
    const record = await this.registry.accept({ document_id: documentId, tenant, op: 'delete' }, (r) => {
      const event: SourceEvent = { event_id: randomUUID(), op: 'delete', document_id: documentId, tenant, version: r.version, emitted_at: nowIso() };
      return { topic: Topic.SourceEvents, key: documentId, value: event };
    });
    await this.relayNow();
    return ok({ document_id: externalId, version: record.version, status: record.status });
  }

  /** The tenant's documents, with their external ids. */
  async list(opts: ListOptions & { tenant: string }): Promise<DocumentRecord[]> {
    return (await this.registry.list(opts)).map((r) => withExternalId(r, opts.tenant));
  }

  counts(tenant: string): Promise<Record<DocumentRecord['status'], number>> {
    return this.registry.countByStatus(tenant);
  }

  /** A document of the tenant by its external id (null when the tenant has none by that id), with its external id. */
  async get(externalId: string, tenant: string): Promise<DocumentRecord | null> {
    const found = await this.find(externalId, tenant);
    return found?.record && found.record.tenant === tenant ? withExternalId(found.record, tenant) : null;
  }

  // --- transactional outbox relay ----------------------------------------------------------------------------

  /**
   * Publishes every outbox message not yet published, oldest first (per-key order within this process), and
   * resolves when the round that includes messages committed before this call has ended. Rounds never overlap: a
   * call while one runs queues (at most) one more round. Rejects when publishing failed; the messages stay in the
   * outbox for the next round.
   */
  relay(): Promise<void> {
    if (this.relayQueued) return this.relayQueued;
    const round = this.relayChain.then(() => {
      this.relayQueued = null;
      return this.relayRound();
    });
    this.relayQueued = round;
    this.relayChain = round.catch(() => undefined);
    return round;
  }

  /** Starts the periodic relay (and relays what a previous process left in the outbox). Idempotent. */
  startRelay(): void {
    if (this.relayTimer) return;
    this.relayTimer = setInterval(() => void this.relayNow(), this.relayIntervalMs);
    this.relayTimer.unref?.();
    void this.relayNow();
  }

  /** Stops the periodic relay and waits for a round in progress. */
  async stopRelay(): Promise<void> {
    if (this.relayTimer) clearInterval(this.relayTimer);
    this.relayTimer = null;
    await this.relayChain;
  }

  /** Nest lifecycle (the gateway module provides this service): relay from start-up to shutdown. */
  onApplicationBootstrap(): void {
    this.startRelay();
  }

  async onModuleDestroy(): Promise<void> {
    await this.stopRelay();
  }

  /** One relay attempt whose failure is logged, not thrown: the accepted change is durable either way. */
  private async relayNow(): Promise<void> {
    try {
      await this.relay();
    } catch (e) {
      this.log.warn('outbox relay: publishing failed; the messages stay in the outbox and are retried', { error: String(e) });
    }
  }

  private async relayRound(): Promise<void> {
    for (;;) {
      const batch = await this.registry.claimOutbox(RELAY_BATCH, this.relayLeaseMs, this.relayClaimBytes);
      if (batch.length === 0) return;
      let done = 0;
      try {
        // Consecutive messages of one topic go in one publish call, in outbox order.
        while (done < batch.length) {
          const topic = batch[done]!.topic;
          let end = done;
          while (end < batch.length && batch[end]!.topic === topic) end++;
          const group: OutboxEntry[] = batch.slice(done, end);
          try {
            await this.bus.publish(
              topic,
              group.map((m) => ({ key: m.key, value: m.value })),
            );
          } catch (e) {
            // Too large for the broker (an upload over the Kafka topic's max.message.bytes): the rest of the group went
            // out; the left-out changes fail with the reason and leave the outbox. Kept, they would be claimed first
            // on every round and hold back every later change — one large upload stopped all ingestion.
            if (!(e instanceof MessageTooLargeError)) throw e;
            await this.failUnpublishable(
              e.indexes.map((i) => group[i]!),
              e.message,
            );
          }
          await this.registry.completeOutbox(group.map((m) => m.id));
          done = end;
        }
      } catch (e) {
        await this.registry.releaseOutbox(batch.slice(done).map((m) => m.id)).catch(() => undefined);
        throw e;
      }
      // Claims until one comes back empty: a claim cut short by the byte budget returns fewer than RELAY_BATCH messages
      // and leaves the rest behind (an empty claim is one read).
    }
  }

  /** Marks the documents of outbox messages the bus cannot carry as failed, with the reason (their version's own status). */
  private async failUnpublishable(entries: OutboxEntry[], reason: string): Promise<void> {
    for (const m of entries) {
      const version = (m.value as { version?: unknown } | null)?.version;
      this.log.warn('outbox relay: a change is too large for the bus; the document is marked failed', { document_id: m.key, version, reason });
      if (typeof version === 'number') await this.registry.markFailed(m.key, version, `gateway: ${reason}`);
    }
  }

  /**
   * The internal id a tenant's external id names, and its record: the qualified id, or (non-default tenants) the
   * plain id of a record stored before ids were scoped when that record is the same tenant's. Null for an invalid id.
   */
  private async find(externalId: string, tenant: string): Promise<{ id: string; record: DocumentRecord | null } | null> {
    const candidates = documentIdCandidates(tenant, externalId);
    if (candidates.length === 0) return null;
    for (const [i, id] of candidates.entries()) {
      const record = await this.registry.get(id);
      // The first candidate is this tenant's own id space (or, for the default tenant, a legacy plain record).
      if (record && (i === 0 || record.tenant === tenant)) return { id, record };
    }
    return { id: internalDocumentId(tenant, externalId), record: null };
  }

  /** `find` for several external ids with one registry read (`getMany`, when the registry has it); invalid ids absent. */
  private async findMany(externalIds: string[], tenant: string): Promise<Map<string, { id: string; record: DocumentRecord | null }>> {
    const out = new Map<string, { id: string; record: DocumentRecord | null }>();
    if (!this.registry.getMany) {
      for (const id of externalIds) {
        const f = await this.find(id, tenant);
        if (f) out.set(id, f);
      }
      return out;
    }
    const candidates = new Map(externalIds.map((id) => [id, documentIdCandidates(tenant, id)]));
    const records = await this.registry.getMany([...new Set([...candidates.values()].flat())]);
    for (const [externalId, ids] of candidates) {
      if (ids.length === 0) continue;
      const hit = ids.findIndex((id, i) => {
        const record = records.get(id);
        return record !== undefined && (i === 0 || record.tenant === tenant);
      });
      out.set(externalId, hit >= 0 ? { id: ids[hit]!, record: records.get(ids[hit]!)! } : { id: internalDocumentId(tenant, externalId), record: null });
    }
    return out;
  }
}

interface PreparedDocument {
  input: DocumentInput;
  file?: UploadedFile;
  bytes: Buffer;
  mime: string;
  rawHash: string;
  externalId: string;
  title?: string;
}

/** Splits items into consecutive groups in which no key repeats (a repeat starts the next group), order kept. */
function distinctRuns<T>(items: T[], keyOf: (item: T) => string): T[][] {
  const runs: T[][] = [];
  let seen = new Set<string>();
  for (const item of items) {
    const key = keyOf(item);
    if (runs.length === 0 || seen.has(key)) {
      runs.push([]);
      seen = new Set();
    }
    runs[runs.length - 1]!.push(item);
    seen.add(key);
  }
  return runs;
}

/** A record as its tenant sees it: the external document id. */
function withExternalId(r: DocumentRecord, tenant: string): DocumentRecord {
  return { ...r, document_id: externalDocumentId(tenant, r.document_id) ?? r.document_id };
}
