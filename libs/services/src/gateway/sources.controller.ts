import { Controller, Get, HttpCode, Inject, Post } from '@nestjs/common';
import { SourceReconciler } from '@rag/application';
import type { AppConfig } from '@rag/platform';
import { SOURCE_CONNECTORS, type SourceConnector } from '@rag/ports';
import { CONFIG } from '../core/tokens';
import { RequireScope } from './auth.guard';
import { SourceActivity, type SourceKindName } from './source-activity';

const KINDS: SourceKindName[] = ['confluence', 'notion'];

/**
 * Confluence and Notion as this gateway sees them (the console's Sources page): whether each is connected (a
 * connector that can list and fetch pages) and receives webhooks (a signing secret), its configured scopes, the last
 * webhook and its outcome, the last reconciliation's counts; and a reconciliation on demand.
 */
@Controller('v1/sources')
export class SourcesController {
  constructor(
    @Inject(CONFIG) private readonly config: AppConfig,
    @Inject(SOURCE_CONNECTORS) private readonly connectors: SourceConnector[],
    private readonly reconciler: SourceReconciler,
    private readonly activity: SourceActivity,
  ) {}

  @Get()
  @RequireScope('ingest', 'admin')
  async list() {
    const c = this.config;
    const webhooks: Record<SourceKindName, boolean> = {
      confluence: !!(c.RAG_CONFLUENCE_WEBHOOK_SECRET || c.RAG_CONFLUENCE_WEBHOOK_SECRET_FILE),
      notion: !!(c.RAG_NOTION_WEBHOOK_SECRET || c.RAG_NOTION_WEBHOOK_SECRET_FILE),
    };
    const sources = await Promise.all(
      KINDS.map(async (kind) => {
        const connector = this.connectors.find((x) => x.kind === kind);
        let scopes: string[] = [];
        let error: string | undefined;
        if (connector) {
          try {
            scopes = await connector.scopes();
          } catch (e) {
            error = e instanceof Error ? e.message : String(e);
          }
        }
        return {
          kind,
          connected: !!connector,
          webhook_configured: webhooks[kind],
          scopes,
          ...(error ? { error } : {}),
          last_webhook: this.activity.lastWebhook(kind),
          last_reconcile: this.activity.lastReconcile(kind),
        };
      }),
    );
    return { sources, reconcile_interval_s: c.RAG_RECONCILE_INTERVAL_S, tenant: c.RAG_SOURCES_TENANT };
  }

  /** One reconciliation pass now (shares a pass already running); answers its per-scope counts. */
  @Post('reconcile')
  @HttpCode(200)
  @RequireScope('admin')
  async reconcile() {
    const reports = await this.reconciler.runOnce();
    this.activity.reconciled(reports, 'manual');
    return { reports };
  }
}
