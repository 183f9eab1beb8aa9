import { createHash } from 'node:crypto';
import type { z } from 'zod';
import {
  ConfluenceWebhookEventTypeSchema,
  ConfluenceWebhookSchema,
  NotionVerificationSchema,
  NotionWebhookEventSchema,
  type ConfluenceWebhookEventType,
} from '@rag/contracts';
import { checkTimestamp, confluenceDocumentId, normalizeNotionId, notionDocumentId, secretsEqual, verifyHmacSha256 } from '@rag/domain';
import { AppError, Logger, type Result, err, formatIssues, ok } from '@rag/platform';
import type { SourceChangeRequest, SourceChangeResult, SourceChangeService } from './source-change.service';

/**
 * Where the token of Notion's (unsigned) verification request is kept while RAG_NOTION_WEBHOOK_SECRET is not set.
 * First one wins: `storeIfAbsent` never replaces a stored token (atomically, also across processes sharing it).
 */
export interface VerificationTokenStore {
  /** Stores the token unless one is stored; answers the token stored now and where it lies (never logged). */
  storeIfAbsent(token: string): Promise<{ stored: boolean; current: string; where: string }>;
}

export interface WebhookIntakeOptions {
  confluence?: { secret?: string; site: string; spaces: string[] };
  notion?: { secret?: string };
  toleranceMs: number;
  /** Keeps the token of a Notion verification request while no secret is configured (never logged). */
  notionVerificationTokens?: VerificationTokenStore;
  now?: () => number;
}

export type WebhookAnswer =
  | SourceChangeResult
  | { status: 'ignored'; reason: string; document_id?: string }
  | { status: 'verified' }
  | { status: 'verification_received'; message: string };

const CONFLUENCE_OPS: Record<ConfluenceWebhookEventType, 'upsert' | 'delete'> = {
  page_created: 'upsert',
  page_updated: 'upsert',
  page_restored: 'upsert',
  page_removed: 'delete',
  page_trashed: 'delete',
  // re-fetched: the loader indexes the page with its new ACL (the registry records it at admission)
  content_permissions_updated: 'upsert',
};
/** Notion page events that change what a page says (title, content, existence). Others are acknowledged only. */
const NOTION_OPS: Record<string, 'upsert' | 'delete'> = {
  'page.created': 'upsert',
  'page.content_updated': 'upsert',
  'page.properties_updated': 'upsert',
  'page.undeleted': 'upsert',
  'page.moved': 'upsert',
  'page.deleted': 'delete',
};

const unauthorized = (reason: string) => err(new AppError('unauthorized', `webhook refused: ${reason}`));

function parseJson<S extends z.ZodType>(raw: Buffer, schema: S, what: string): Result<z.infer<S>, AppError> {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return err(new AppError('invalid_request', `malformed ${what}: the body is not JSON`));
  }
  const r = schema.safeParse(body);
  if (!r.success) {
    return err(
      new AppError(
        'invalid_request',
        `malformed ${what}: ${formatIssues(r.error.issues, 'body', 5)}`,
      ),
    );
  }
  return ok(r.data as z.infer<S>);
}

/**
 * Webhook edge: verify (HMAC-SHA256 of the raw body with the shared secret, constant-time), refuse events outside
 * the replay window, validate the payload, map it to a source change and hand it to the SourceChangeService
 * (dedupe by event id, per-document ordering, queue). Every refusal is a 4xx value and queues nothing.
 */
export class WebhookIntake {
  private readonly log = new Logger('webhooks');
  private readonly now: () => number;

  constructor(
    private readonly changes: SourceChangeService,
    private readonly opts: WebhookIntakeOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * Every operation is chosen by the signed bytes only. The body's `event` picks it; a body that names no event
   * (Cloud webhooks registered per event at a URL with `?event=`) is a sync: the change is queued as an upsert and
   * the loader fetches the page's current state, deleting the document when the page is gone at the source. So the
   * unsigned `eventHint` (the URL's `?event=`) never chooses a delete — re-posting a signed `page_updated` body with
   * `?event=page_removed` cannot remove a live page; it is only required and validated (an unnamed body at a URL
   * without a valid `?event=` is a misconfiguration: 400).
   */
  async confluence(raw: Buffer, headers: Record<string, string | undefined>, eventHint?: string): Promise<Result<WebhookAnswer, AppError>> {
    const cfg = this.opts.confluence;
    if (!cfg?.secret) return err(new AppError('not_found', 'Confluence webhooks are not configured (RAG_CONFLUENCE_WEBHOOK_SECRET)'));
    const sig = verifyHmacSha256(cfg.secret, raw, headers['x-hub-signature']);
    if (!sig.ok) return unauthorized(sig.reason);
    const parsed = parseJson(raw, ConfluenceWebhookSchema, 'Confluence webhook payload');
    if (!parsed.ok) return parsed;
    const e = parsed.value;
    const fresh = checkTimestamp(e.timestamp, this.now(), this.opts.toleranceMs);
    if (!fresh.ok) return unauthorized(`${fresh.reason} (replayed or delayed event)`);
    const eventType = e.event ?? e.webhookEvent;
    if (!eventType && !ConfluenceWebhookEventTypeSchema.safeParse(eventHint).success) {
      // the documented contract: the event is named by the body or the URL (which only marks a sync, see above)
      return err(new AppError('invalid_request', `malformed Confluence webhook payload: no event (body \`event\`, or the endpoint's ?event= one of ${ConfluenceWebhookEventTypeSchema.options.join(', ')})`));
    }
    // `page` or (content_permissions_updated) `content`: the schema refuses a payload with neither
    const page = (e.page ?? e.content)!;
    const documentId = confluenceDocumentId(cfg.site, page.id);
    if (page.contentType && page.contentType !== 'page') return ok({ status: 'ignored', reason: `content type ${page.contentType} is not indexed`, document_id: documentId });
    if (cfg.spaces.length && page.spaceKey && !cfg.spaces.includes(page.spaceKey)) {
      return ok({ status: 'ignored', reason: `space ${page.spaceKey} is not configured`, document_id: documentId });
    }
    // Dedupe on the signed bytes: Confluence sends no event id in the body, and the X-Atlassian-Webhook-Identifier
    // header is not signed (a replay with a new header must stay a duplicate). A redelivery repeats the bytes
    // exactly; two real events differ at least in their millisecond timestamp.
    const eventId = `confluence:sha256:${createHash('sha256').update(raw).digest('hex')}`;
    const req: SourceChangeRequest = {
      event_id: eventId,
      kind: 'confluence',
      document_id: documentId,
      ref: page.id,
      op: eventType ? CONFLUENCE_OPS[eventType] : 'upsert',
      changed_at: e.timestamp,
      ...(page.spaceKey ? { scope: page.spaceKey } : {}),
      ...(page.version !== undefined ? { source_version: String(page.version) } : {}),
      ...(page.title ? { title: page.title } : {}),
      ...(page.self ? { source_url: page.self } : {}),
    };
    return ok(await this.changes.apply(req));
  }

  async notion(raw: Buffer, headers: Record<string, string | undefined>): Promise<Result<WebhookAnswer, AppError>> {
    const cfg = this.opts.notion;
    if (!cfg) return err(new AppError('not_found', 'Notion webhooks are not configured (RAG_NOTION_TOKEN)'));
    // The one-time verification request is unsigned: it delivers the token later events are signed with.
    if (!headers['x-notion-signature']) {
      const v = parseJson(raw, NotionVerificationSchema, 'Notion verification request');
      if (!v.ok) return unauthorized('missing X-Notion-Signature');
      if (cfg.secret) {
        return secretsEqual(v.value.verification_token, cfg.secret) ? ok({ status: 'verified' }) : unauthorized('verification token does not match');
      }
      // Unsigned, so it may come from anyone: the first token is kept and never replaced by another unsigned
      // request (an operator resets it by configuring RAG_NOTION_WEBHOOK_SECRET, or by deleting the stored file).
      const store = this.opts.notionVerificationTokens;
      let where: string | undefined;
      if (store) {
        const kept = await store.storeIfAbsent(v.value.verification_token);
        where = kept.where;
        if (!kept.stored && !secretsEqual(kept.current, v.value.verification_token)) {
          this.log.warn('Notion verification request refused: another verification token is already stored', { stored_at: kept.where });
          return err(
            new AppError(
              'conflict',
              `a Notion verification token is already stored (${kept.where}); an unsigned request cannot replace it. Set RAG_NOTION_WEBHOOK_SECRET to the token of your subscription, or delete that file to accept a new verification request`,
            ),
          );
        }
      }
      this.log.warn('Notion verification request received; set RAG_NOTION_WEBHOOK_SECRET to its token', { ...(where ? { written_to: where } : {}) });
      return ok({
        status: 'verification_received',
        message: `set RAG_NOTION_WEBHOOK_SECRET to the verification token${where ? ` (written to ${where})` : ''} and paste it into Notion to activate the subscription`,
      });
    }
    if (!cfg.secret) return err(new AppError('not_found', 'Notion webhook events need RAG_NOTION_WEBHOOK_SECRET (the verification token)'));
    const sig = verifyHmacSha256(cfg.secret, raw, headers['x-notion-signature']);
    if (!sig.ok) return unauthorized(sig.reason);
    const parsed = parseJson(raw, NotionWebhookEventSchema, 'Notion webhook event');
    if (!parsed.ok) return parsed;
    const e = parsed.value;
    const at = Date.parse(e.timestamp);
    const fresh = checkTimestamp(at, this.now(), this.opts.toleranceMs);
    if (!fresh.ok) return unauthorized(`${fresh.reason} (replayed or delayed event)`);
    const op = NOTION_OPS[e.type];
    const documentId = notionDocumentId(e.entity.id);
    if (!op || e.entity.type !== 'page') return ok({ status: 'ignored', reason: `event type ${e.type} does not change indexed pages`, document_id: documentId });
    return ok(
      await this.changes.apply({
        event_id: `notion:${e.id}`,
        kind: 'notion',
        document_id: documentId,
        ref: normalizeNotionId(e.entity.id),
        op,
        changed_at: at,
        scope: 'workspace',
      }),
    );
  }
}
