import { Controller, HttpCode, Inject, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { WebhookIntake } from '@rag/application';
import { AppError } from '@rag/platform';
import { Public } from './auth.guard';

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
  constructor(@Inject(WebhookIntake) private readonly intake: WebhookIntake) {}

  @Post('confluence')
  @HttpCode(200)
  async confluence(@Req() req: Request) {
    const hint = typeof req.query.event === 'string' ? req.query.event : undefined;
    const r = await this.intake.confluence(rawBody(req), headersOf(req), hint);
    if (!r.ok) throw r.error;
    return r.value;
  }

  @Post('notion')
  @HttpCode(200)
  async notion(@Req() req: Request) {
    const r = await this.intake.notion(rawBody(req), headersOf(req));
    if (!r.ok) throw r.error;
    return r.value;
  }
}
