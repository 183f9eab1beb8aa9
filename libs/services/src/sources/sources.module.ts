import { join } from 'node:path';
import { Inject, Injectable, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { NotionVerificationTokenFile, confluenceSite, confluenceSpaces, createLeaderElection, createSourceConnectors, createSourceState, secretFrom, sourcesDefaultAcl } from '@rag/adapters';
import { SourceChangeService, SourceReconciler, WebhookIntake } from '@rag/application';
import { type AppConfig, Logger } from '@rag/platform';
import { BUS, LEADER_ELECTION, REGISTRY, SOURCE_CONNECTORS, SOURCE_STATE, type Bus, type LeaderElection, type Registry, type SourceConnector, type SourceStateStore } from '@rag/ports';
import { CONFIG } from '../core/tokens';
import { SourceActivity } from '../gateway/source-activity';
import { WebhooksController } from '../gateway/webhooks.controller';

/**
 * Runs the reconciler every RAG_RECONCILE_INTERVAL_S (first pass shortly after start), one pass at a time, on the one
 * gateway replica that holds the `reconciler` leadership (a PostgreSQL advisory lock with RAG_DATABASE_URL; always this
 * process without one). A follower checks again every RAG_LEADER_POLL_MS, so when the leader dies another replica
 * takes over and runs a pass within about that time.
 */
@Injectable()
export class ReconcileScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('reconciler');
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly reconciler: SourceReconciler,
    @Inject(CONFIG) private readonly config: AppConfig,
    @Inject(SOURCE_CONNECTORS) private readonly connectors: SourceConnector[],
    @Inject(SOURCE_STATE) private readonly state: SourceStateStore,
    @Inject(LEADER_ELECTION) private readonly leader: LeaderElection,
    private readonly activity: SourceActivity,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const every = this.config.RAG_RECONCILE_INTERVAL_S;
    if (every <= 0 || this.connectors.length === 0) return;
    await this.leader.start();
    const tick = (delayMs: number) => {
      this.timer = setTimeout(() => {
        if (!this.leader.isLeader()) {
          if (!this.stopped) tick(this.config.RAG_LEADER_POLL_MS);
          return;
        }
        this.reconciler
          .runOnce()
          .then((reports) => this.activity.reconciled(reports, 'schedule'))
          .catch((e: unknown) => this.log.warn('reconciliation pass failed', { error: String(e) }))
          .finally(() => {
            if (!this.stopped) tick(every * 1000);
          });
      }, delayMs);
      this.timer.unref();
    };
    tick(Math.min(5_000, every * 1000));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.leader.close();
    await this.state.close();
  }
}

/**
 * Confluence/Notion sources at the gateway: the webhook endpoints, the admission of source changes (dedupe,
 * ordering, versions) and the scheduled reconciliation. Needs the registry and the bus.
 */
@Module({
  controllers: [WebhooksController],
  providers: [
    { provide: SOURCE_STATE, useFactory: (c: AppConfig) => createSourceState(c), inject: [CONFIG] },
    { provide: SOURCE_CONNECTORS, useFactory: (c: AppConfig) => createSourceConnectors(c), inject: [CONFIG] },
    {
      provide: SourceChangeService,
      useFactory: (r: Registry, b: Bus, s: SourceStateStore, conns: SourceConnector[], c: AppConfig) =>
        new SourceChangeService(r, b, s, { tenant: c.RAG_SOURCES_TENANT, defaultAcl: sourcesDefaultAcl(c), connectors: conns }),
      inject: [REGISTRY, BUS, SOURCE_STATE, SOURCE_CONNECTORS, CONFIG],
    },
    {
      provide: WebhookIntake,
      useFactory: (changes: SourceChangeService, c: AppConfig) => {
        const confluenceSecret = secretFrom(c.RAG_CONFLUENCE_WEBHOOK_SECRET, c.RAG_CONFLUENCE_WEBHOOK_SECRET_FILE);
        const notionSecret = secretFrom(c.RAG_NOTION_WEBHOOK_SECRET, c.RAG_NOTION_WEBHOOK_SECRET_FILE);
        const notionOn = !!(notionSecret || c.RAG_NOTION_TOKEN || c.RAG_NOTION_TOKEN_FILE);
        return new WebhookIntake(changes, {
          toleranceMs: c.RAG_WEBHOOK_TOLERANCE_S * 1000,
          ...(confluenceSecret ? { confluence: { secret: confluenceSecret, site: confluenceSite(c) ?? 'confluence', spaces: confluenceSpaces(c) } } : {}),
          ...(notionOn ? { notion: notionSecret ? { secret: notionSecret } : {} } : {}),
          // The token is a secret: it goes to a private file in the data folder, never to the log; the first one is
          // kept (an unsigned request cannot replace it).
          notionVerificationTokens: new NotionVerificationTokenFile(join(c.dataDir, 'notion-verification-token')),
        });
      },
      inject: [SourceChangeService, CONFIG],
    },
    {
      provide: SourceReconciler,
      useFactory: (conns: SourceConnector[], s: SourceStateStore, changes: SourceChangeService, c: AppConfig) =>
        new SourceReconciler(conns, s, changes, c.RAG_SOURCES_TENANT),
      inject: [SOURCE_CONNECTORS, SOURCE_STATE, SourceChangeService, CONFIG],
    },
    { provide: LEADER_ELECTION, useFactory: (c: AppConfig) => createLeaderElection(c, 'reconciler'), inject: [CONFIG] },
    ReconcileScheduler,
    SourceActivity,
  ],
  exports: [SourceChangeService, SourceReconciler, WebhookIntake, SourceActivity, SOURCE_CONNECTORS],
})
export class SourcesModule {}
