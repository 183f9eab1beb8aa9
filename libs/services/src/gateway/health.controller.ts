import { Controller, Get, Inject, Optional, Res } from '@nestjs/common';
import type { Response } from 'express';
import { StoreIntegrityService } from '@rag/application';
import { livenessResponse, metricsRegistry } from '@rag/platform';
import { BUS, REGISTRY, type Bus, type Registry } from '@rag/ports';
import { renderMetrics, withTimeout } from '../core/metrics-endpoint';
import { HttpDrain } from '../http-drain';
import { Public } from './auth.guard';

@Controller()
@Public()
export class HealthController {
  constructor(
    @Optional() @Inject(REGISTRY) private readonly registry?: Registry,
    @Optional() @Inject(BUS) private readonly bus?: Bus,
    /** The embedded runner's store integrity (start-up check, files, counts); absent in the distributed gateway. */
    @Optional() @Inject(StoreIntegrityService) private readonly integrity?: StoreIntegrityService,
    /** Shutting down: the HTTP server drains (http-drain.ts); not ready, so that load balancers stop sending traffic. */
    @Optional() private readonly drain?: HttpDrain,
  ) {}

  /** Liveness: 200 while the process runs; 503 naming the parts only a restart repairs (platform health/liveness). */
  @Get('healthz')
  healthz(@Res() res: Response) {
    const { code, body } = livenessResponse();
    res.status(code).json(body);
  }

  /**
   * Ready when the registry and the bus answer and every embedded store is sound: the start-up integrity check passed,
   * each file is still a SQLite file, no query has hit a corrupt page since, and the registry and the indexes agree on
   * their counts (a small difference is a warning). 503 names the store that failed.
   */
  @Get('readyz')
  async readyz(@Res() res: Response) {
    if (this.drain?.draining) {
      res.status(503).json({ status: 'not_ready', error: 'shutting down' });
      return;
    }
    try {
      const stores = this.integrity ? await this.integrity.readiness() : undefined;
      const storeView = stores && { problems: stores.problems, warnings: stores.warnings, integrity_check: stores.integrity, counts: stores.counts };
      if (stores && !stores.ready) {
        res.status(503).json({ status: 'not_ready', error: stores.problems.map((p) => p.message).join('\n'), stores: storeView });
        return;
      }
      // Each read is time-limited: a registry or broker that hangs answers 503 naming it, never a hung probe.
      const [counts, lag] = await Promise.all([
        this.registry ? withTimeout(this.registry.countByStatus(), 'registry (documents by status)') : undefined,
        this.bus ? withTimeout(this.bus.lag(), 'bus (consumer lag)') : [],
      ]);
      res.status(200).json({ status: 'ready', documents: counts, backlog: lag.reduce((a, l) => a + l.lag, 0), ...(storeView ? { stores: storeView } : {}) });
    } catch (e) {
      res.status(503).json({ status: 'not_ready', error: e instanceof Error ? e.message : String(e) });
    }
  }

  @Get('metrics')
  async metrics(@Res() res: Response) {
    res.setHeader('Content-Type', metricsRegistry.contentType);
    res.send(await renderMetrics({ bus: this.bus, registry: this.registry }));
  }
}
