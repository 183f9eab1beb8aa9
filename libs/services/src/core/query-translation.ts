import { Inject, Injectable, type OnApplicationBootstrap, type Provider } from '@nestjs/common';
import { createQueryTranslator, type DictionaryQueryTranslator } from '@rag/adapters';
import { type AppConfig, Logger } from '@rag/platform';
import { QUERY_TRANSLATOR } from '@rag/ports';
import { CONFIG } from './tokens';

/**
 * QUERY_TRANSLATOR (RAG_TRANSLATION, issue 15 item 4): the dictionary query translator, or null when off. The
 * gateway's query orchestrator (translated retrieval) and the generator (the gate on the translation) each inject it;
 * in one process they share one instance (createQueryTranslator), distributed each of the two processes loads it.
 */
export const queryTranslatorProvider: Provider = {
  provide: QUERY_TRANSLATOR,
  useFactory: (c: AppConfig) => createQueryTranslator(c),
  inject: [CONFIG],
};

/**
 * Start-up: when the dictionary's derived tables are already cached (RAG_DATA_DIR/translation), loading them (≈ 2 s,
 * one JSON.parse) starts in the background at once. Without a cache nothing is built at start-up: the first question
 * that needs a translation starts the build (in event-loop slices) and is answered untranslated, like every question
 * until it is done, so processes that never see a cross-lingual question (and test servers) never pay for it.
 */
@Injectable()
export class QueryTranslatorWarmUp implements OnApplicationBootstrap {
  private readonly log = new Logger('translation');
  constructor(@Inject(QUERY_TRANSLATOR) private readonly translator: DictionaryQueryTranslator | null) {}

  onApplicationBootstrap(): void {
    if (!this.translator?.cached()) return;
    this.translator.whenReady().catch((e: unknown) => this.log.warn('query translation unavailable', { error: String(e) }));
  }
}
