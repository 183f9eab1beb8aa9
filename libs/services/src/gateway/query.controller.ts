import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { z } from 'zod';
import { QueryOrchestrator, newTraceId } from '@rag/application';
import { FeedbackInputSchema, QueryInputSchema, RetrieveInputSchema } from '@rag/contracts';
import { AppError, Logger, invalidRequest, metrics } from '@rag/platform';
import { REGISTRY, type Registry } from '@rag/ports';
import { scopeOf } from './auth';
import { principalOf, RequireScope } from './auth.guard';

function parse<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0)) {
    throw new AppError('invalid_request', 'empty body');
  }
  // zod drops a `__proto__` key silently; a filter the caller sent must never vanish without an answer.
  const filters = (body as { filters?: unknown }).filters;
  if (filters !== null && typeof filters === 'object' && Object.prototype.hasOwnProperty.call(filters, '__proto__')) {
    throw new AppError('invalid_request', 'filters: the key "__proto__" is not allowed');
  }
  const r = schema.safeParse(body);
  if (!r.success) {
    throw invalidRequest(r.error.issues);
  }
  return r.data;
}

@Controller('v1')
@RequireScope('query')
export class QueryController {
  private readonly log = new Logger('gateway');
  constructor(
    private readonly query: QueryOrchestrator,
    @Inject(REGISTRY) private readonly registry: Registry,
  ) {}

  @Post('query')
  async ask(@Req() req: Request, @Res() res: Response, @Body() body: unknown): Promise<void> {
    const who = principalOf(req);
    const input = parse(QueryInputSchema, body);
    const traceId = newTraceId();
    if (!input.stream) {
      const answer = await this.query.answer(input, scopeOf(who), undefined, traceId);
      record(answer);
      await this.issued(traceId, who.tenant);
      res.status(200).json(answer);
      return;
    }
    // Server-sent events: `delta` events with answer text as it is produced, then one `done` event with the
    // whole answer (citations, timings, and the verification: `statements` with their support — under RAG_VERIFY=drop
    // or refuse its `answer` can differ from the streamed text); an `error` event if the query fails after the stream began.
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    try {
      const answer = await this.query.answer(input, scopeOf(who), (text) => send('delta', { text }), traceId);
      record(answer);
      await this.issued(traceId, who.tenant);
      send('done', answer);
    } catch (e) {
      const code = e instanceof AppError ? e.code : 'internal';
      send('error', { error: { code, message: e instanceof AppError ? e.message : 'internal error' }, trace_id: traceId });
    }
    res.end();
  }

  @Post('retrieve')
  @HttpCode(200)
  async retrieve(@Req() req: Request, @Body() body: unknown) {
    const who = principalOf(req);
    const input = parse(RetrieveInputSchema, body);
    const { chunks: _chunks, ...rest } = await this.query.retrieve({ ...input, question: input.query }, scopeOf(who));
    await this.issued(rest.trace_id, who.tenant);
    return rest;
  }

  /** Feedback is bound to a trace this gateway issued to the caller's tenant: any other trace id is a 404. */
  @Post('feedback')
  @HttpCode(202)
  async feedback(@Req() req: Request, @Body() body: unknown) {
    const who = principalOf(req);
    const input = parse(FeedbackInputSchema, body);
    const stored = await this.registry.recordFeedback(input.trace_id, who.tenant, input.rating, input.comment);
    // The same answer for an unknown trace and another tenant's: no oracle for other tenants' trace ids.
    if (!stored) throw new AppError('not_found', `trace ${input.trace_id} not found: feedback needs the trace_id of a query or retrieve answer of your tenant`);
    metrics.feedback.inc({ rating: input.rating });
    return { accepted: true };
  }

  /** Remembers the answer's trace for feedback; a registry failure costs that feedback, never the answer. */
  private async issued(traceId: string, tenant: string): Promise<void> {
    try {
      await this.registry.recordQueryTrace(traceId, tenant);
    } catch (e) {
      this.log.warn('could not record the query trace; feedback on it will be refused', { trace_id: traceId, error: String(e) });
    }
  }
}

function record(answer: { refused: boolean; degraded: string[] }): void {
  metrics.answers.inc({ outcome: answer.refused ? 'refused' : 'answered' });
  for (const d of answer.degraded) metrics.degraded.inc({ part: d });
}
