import { Controller, HttpCode, Inject, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { WebhookIntake, type WebhookAnswer } from '@rag/application';
import { AppError, type Result } from '@rag/platform';
import { Public } from './auth.guard';
import { SourceActivity, type SourceKindName } from './source-activity';

function rawBody(req: Request): Buffer {
  if (Buffer.isBuffer(req.body)) return req.body;
  // express.raw runs for /v1/webhooks (http.ts); anything else means the body was already consumed differently.
  throw new AppError('invalid_request', 'webhook body must be sent as raw bytes (application/json)');
}

function headersOf(req: Request): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(req.headers)) out[k] = Array.isArray(v) ? v[0] : v;
  return out;
}

/**
 * `POST /v1/webhooks/confluence` and `POST /v1/webhooks/notion`. Not behind API keys: each request is authenticated
 * by its HMAC signature. 200 with `{status: queued|duplicate|ignored|verified|…}`; a bad signature or a replay
 * gets 401, a malformed payload 400, an unconfigured source 404 — and queues nothing.
 */
@Public()
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(
    @Inject(WebhookIntake) private readonly intake: WebhookIntake,
    /** The last webhook of each source, for GET /v1/sources (the console's Sources page). */
    @Inject(SourceActivity) private readonly activity: SourceActivity,
  ) {}

  @Post('confluence')
  @HttpCode(200)
  async confluence(@Req() req: Request) {
    const hint = typeof req.query.event === 'string' ? req.query.event : undefined;
    return this.noted('confluence', () => this.intake.confluence(rawBody(req), headersOf(req), hint));
  }

  @Post('notion')
  @HttpCode(200)
  async notion(@Req() req: Request) {
    return this.noted('notion', () => this.intake.notion(rawBody(req), headersOf(req)));
  }

  /** Runs the intake and records its outcome (success or error) as the source's last webhook. */
  private async noted(kind: SourceKindName, run: () => Promise<Result<WebhookAnswer>>): Promise<WebhookAnswer> {
    let r: Result<WebhookAnswer>;
    try {
      r = await run();
    } catch (e) {
      const err = e instanceof AppError ? e : new AppError('internal', 'internal error');
      this.activity.webhook(kind, { ok: false, outcome: err.code, detail: err.message });
      throw e;
    }
    if (!r.ok) {
      this.activity.webhook(kind, { ok: false, outcome: r.error.code, detail: r.error.message });
      throw r.error;
    }
    const v = r.value;
    const detail = 'reason' in v ? v.reason : undefined;
    const documentId = 'document_id' in v ? v.document_id : undefined;
    this.activity.webhook(kind, { ok: true, outcome: v.status, ...(detail ? { detail } : {}), ...(documentId ? { document_id: documentId } : {}) });
    return v;
  }
}
