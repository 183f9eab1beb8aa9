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
import { AppError, Logger, type Result, err, ok } from '@rag/platform';
import type { SourceChangeRequest, SourceChangeResult, SourceChangeService } from './source-change.service';

export interface WebhookIntakeOptions {
  confluence?: { secret?: string; site: string; spaces: string[] };
  notion?: { secret?: string };
  toleranceMs: number;
  /** Called with the token of a Notion verification request while no secret is configured (never logged). */
  onNotionVerificationToken?: (token: string) => Promise<string | undefined>;
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
        `malformed ${what}: ${r.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`,
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

  /** `eventHint`: the `?event=` of the webhook URL, for payloads that do not name their event (unsigned, so a body naming its event wins). */
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
    const hinted = ConfluenceWebhookEventTypeSchema.safeParse(eventHint);
    const eventType = e.event ?? e.webhookEvent ?? (hinted.success ? hinted.data : undefined);
    if (!eventType) {
      return err(new AppError('invalid_request', `malformed Confluence webhook payload: no event (body \`event\`, or the endpoint's ?event= one of ${ConfluenceWebhookEventTypeSchema.options.join(', ')})`));
    }
    const documentId = confluenceDocumentId(cfg.site, e.page.id);
    if (e.page.contentType && e.page.contentType !== 'page') return ok({ status: 'ignored', reason: `content type ${e.page.contentType} is not indexed`, document_id: documentId });
    if (cfg.spaces.length && e.page.spaceKey && !cfg.spaces.includes(e.page.spaceKey)) {
      return ok({ status: 'ignored', reason: `space ${e.page.spaceKey} is not configured`, document_id: documentId });
    }
    // Confluence sends no event id in the body; a delivery identifier header when present, else the signed bytes
    // themselves (a redelivery repeats them exactly).
    const eventId = headers['x-atlassian-webhook-identifier'] ?? `${eventType}:sha256:${createHash('sha256').update(raw).digest('hex')}`;
    const req: SourceChangeRequest = {
      event_id: `confluence:${eventId}`,
      kind: 'confluence',
      document_id: documentId,
      ref: e.page.id,
      op: CONFLUENCE_OPS[eventType],
      changed_at: e.timestamp,
      ...(e.page.spaceKey ? { scope: e.page.spaceKey } : {}),
      ...(e.page.version !== undefined ? { source_version: String(e.page.version) } : {}),
      ...(e.page.title ? { title: e.page.title } : {}),
      ...(e.page.self ? { source_url: e.page.self } : {}),
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
      const where = await this.opts.onNotionVerificationToken?.(v.value.verification_token);
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
