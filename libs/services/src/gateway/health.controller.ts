import { Controller, Get, Header, Inject, Optional, Res } from '@nestjs/common';
import type { Response } from 'express';
import { metricsRegistry } from '@rag/platform';
import { BUS, REGISTRY, type Bus, type Registry } from '@rag/ports';
import { renderMetrics } from '../core/metrics-endpoint';
import { Public } from './auth.guard';
import { PLAYGROUND_HTML } from './playground.html';

@Controller()
@Public()
export class HealthController {
  constructor(
    @Optional() @Inject(REGISTRY) private readonly registry?: Registry,
    @Optional() @Inject(BUS) private readonly bus?: Bus,
  ) {}

  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  /** Ready when the registry answers; reports the ingestion backlog. */
  @Get('readyz')
  async readyz(@Res() res: Response) {
    try {
      const counts = this.registry ? await this.registry.countByStatus() : undefined;
      const lag = this.bus ? await this.bus.lag() : [];
      res.status(200).json({ status: 'ready', documents: counts, backlog: lag.reduce((a, l) => a + l.lag, 0) });
    } catch (e) {
      res.status(503).json({ status: 'not_ready', error: String(e) });
    }
  }

  @Get('metrics')
  async metrics(@Res() res: Response) {
    res.setHeader('Content-Type', metricsRegistry.contentType);
    res.send(await renderMetrics({ bus: this.bus, registry: this.registry }));
  }

  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  playground() {
    return PLAYGROUND_HTML;
  }
}
