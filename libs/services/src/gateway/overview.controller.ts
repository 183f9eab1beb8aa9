import { Controller, Get, Inject, Req } from '@nestjs/common';
import type { Request } from 'express';
import { DocumentService } from '@rag/application';
import type { AppConfig } from '@rag/platform';
import { CONFIG } from '../core/tokens';
import { principalOf, RequireScope } from './auth.guard';
import { OverviewSampler, readLatestEval } from './overview';

/**
 * The console's Overview: the tenant's documents by status, and over the last hour (or since this gateway started)
 * documents that finished ingestion, dead-lettered messages, answers and refusals, and feedback — the gateway
 * process's own counters, the numbers /metrics exposes — and the latest `rag eval` report of this data folder.
 */
@Controller('v1/overview')
@RequireScope('ingest', 'admin')
export class OverviewController {
  constructor(
    private readonly documents: DocumentService,
    private readonly sampler: OverviewSampler,
    @Inject(CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  async get(@Req() req: Request) {
    const counts = await this.documents.counts(principalOf(req).tenant);
    const { window_s, counts: c } = await this.sampler.summary();
    const answers = c.answered + c.refused;
    return {
      documents: counts,
      window_s,
      ingested: c.index_events,
      ingestion_per_min: window_s > 0 ? Math.round((c.index_events / window_s) * 60 * 100) / 100 : 0,
      dead_letters: c.dead_letters,
      answers: { answered: c.answered, refused: c.refused, refusal_rate: answers ? Math.round((c.refused / answers) * 1000) / 1000 : null },
      feedback: { up: c.feedback_up, down: c.feedback_down },
      eval: await readLatestEval(this.config.dataDir),
    };
  }
}
