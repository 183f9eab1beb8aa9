import { Controller, Get, Inject, Module, Optional, Res } from '@nestjs/common';
import type { Response } from 'express';
import { livenessResponse, metricsRegistry } from '@rag/platform';
import { BUS, type Bus } from '@rag/ports';
import { Public } from '../gateway/auth.guard';
import { renderMetrics } from './metrics-endpoint';
import { ReadinessModule, ReadinessService, readinessResponse } from './readiness';

/** /healthz (the process runs), /readyz (its dependencies answer) and /metrics of a stage service on RAG_PORT. */
@Controller()
@Public()
export class ServiceHealthController {
  constructor(
    private readonly readiness: ReadinessService,
    @Optional() @Inject(BUS) private readonly bus?: Bus,
  ) {}

  /** Liveness: 200 while the process runs; 503 naming the parts only a restart repairs (platform health/liveness). */
  @Get('healthz')
  healthz(@Res() res: Response) {
    const { code, body } = livenessResponse();
    res.status(code).json(body);
  }

  /** 200 when every dependency of this service answers (readiness.ts), else 503 naming the ones that do not. */
  @Get('readyz')
  async readyz(@Res() res: Response) {
    const { code, body } = readinessResponse(await this.readiness.readiness());
    res.status(code).json(body);
  }

  @Get('metrics')
  async metrics(@Res() res: Response) {
    res.setHeader('Content-Type', metricsRegistry.contentType);
    res.send(await renderMetrics({ bus: this.bus }));
  }
}

@Module({ imports: [ReadinessModule], controllers: [ServiceHealthController] })
export class HealthEndpointsModule {}
