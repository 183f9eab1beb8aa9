import { Global, Injectable, Module, type DynamicModule, type OnApplicationBootstrap, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ValidatingBus, createBus, createEmbedder, createKeywordIndex, createLlm, createRegistry, createReranker, createVectorStore, embeddingSpace, withKeywordSearchWorkers, withKeywordWriteWorker } from '@rag/adapters';
import { type AppConfig, Logger } from '@rag/platform';
import {
  BUS,
  EMBEDDER,
  EMBEDDING_SPACE,
  KEYWORD_INDEX,
  LLM,
  REGISTRY,
  RERANKER,
  VECTOR_STORE,
  type Bus,
  type MessageBroker,
  type Embedder,
  type EmbeddingSpace,
  type KeywordIndex,
  type Llm,
  type Registry,
  type VectorStore,
} from '@rag/ports';
import { CONFIG } from './tokens';

/** Which adapters a process needs: a loader process does not load an embedding model. */
export type Part = 'bus' | 'registry' | 'embedder' | 'vectors' | 'keywords' | 'reranker' | 'llm';
export const ALL_PARTS: Part[] = ['bus', 'registry', 'embedder', 'vectors', 'keywords', 'reranker', 'llm'];

const TOKENS: Record<Part, symbol> = {
  bus: BUS,
  registry: REGISTRY,
  embedder: EMBEDDER,
  vectors: VECTOR_STORE,
  keywords: KEYWORD_INDEX,
  reranker: RERANKER,
  llm: LLM,
};

/** Starts the bus once every consumer has subscribed; closes consumers first and stores last on shutdown. */
@Injectable()
class CoreLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('core');
  constructor(
    private readonly parts: Part[],
    private readonly moduleRef: ModuleRef,
  ) {}

  private get<T>(part: Part): T | null {
    if (!this.parts.includes(part)) return null;
    return this.moduleRef.get<T>(TOKENS[part], { strict: false });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.get<Bus>('bus')?.start();
  }

  async onApplicationShutdown(): Promise<void> {
    const steps: [string, (() => Promise<void>) | undefined][] = [
      ['bus', () => this.get<Bus>('bus')!.close()],
      ['vectors', () => this.get<VectorStore>('vectors')!.close()],
      ['keywords', () => this.get<KeywordIndex>('keywords')!.close()],
      ['registry', () => this.get<Registry>('registry')!.close()],
      ['embedder', this.get<Embedder>('embedder')?.close?.bind(this.get<Embedder>('embedder'))],
      ['reranker', this.get<{ close?: () => Promise<void> }>('reranker')?.close?.bind(this.get<{ close?: () => Promise<void> }>('reranker'))],
      ['llm', this.get<Llm>('llm')?.close?.bind(this.get<Llm>('llm'))],
    ];
    for (const [part, close] of steps) {
      if (!this.parts.includes(part as Part) || !close) continue;
      try {
        await close();
      } catch (e) {
        this.log.warn('close failed', { part, error: String(e) });
      }
    }
  }
}

@Global()
@Module({})
export class CoreModule {
  /** Binds each needed port to the adapter chosen by the configuration. */
  static forRoot(config: AppConfig, parts: Part[] = ALL_PARTS): DynamicModule {
    const providers: Provider[] = [{ provide: CONFIG, useValue: config }];
    const need = (p: Part) => parts.includes(p);
    // The broker wrapped so that every published value is checked against its topic's schema on the way out.
    if (need('bus')) providers.push({ provide: BUS, useFactory: async () => new ValidatingBus((await createBus(config)) as MessageBroker) });
    if (need('registry')) providers.push({ provide: REGISTRY, useFactory: () => createRegistry(config) });
    if (need('embedder')) providers.push({ provide: EMBEDDER, useFactory: () => createEmbedder(config) });
    if (need('vectors')) {
      // Which vectors the store holds: from the loaded embedder when this process embeds, else from the model
      // manifests, so an indexer or retriever never loads an embedding model it would not run.
      providers.push(
        need('embedder')
          ? { provide: EMBEDDING_SPACE, useFactory: (e: Embedder): EmbeddingSpace => ({ modelId: e.modelId, dim: e.dim }), inject: [EMBEDDER] }
          : { provide: EMBEDDING_SPACE, useFactory: () => embeddingSpace(config) },
        { provide: VECTOR_STORE, useFactory: (s: EmbeddingSpace) => createVectorStore(config, s), inject: [EMBEDDING_SPACE] },
      );
    }
    // embedded keyword searches on RAG_QUERY_WORKERS worker threads (issue 13 item 3) and its writes on a writer thread
    // (RAG_KEYWORD_WRITE_WORKER); other engines as they are
    if (need('keywords')) providers.push({ provide: KEYWORD_INDEX, useFactory: async () => withKeywordSearchWorkers(await withKeywordWriteWorker(await createKeywordIndex(config), config), config) });
    if (need('reranker')) providers.push({ provide: RERANKER, useFactory: () => createReranker(config) });
    if (need('llm')) providers.push({ provide: LLM, useFactory: () => createLlm(config) });
    const exported = providers.map((p) => (p as { provide: string | symbol }).provide);
    return {
      module: CoreModule,
      global: true,
      providers: [...providers, { provide: 'CORE_PARTS', useValue: parts }, { provide: CoreLifecycle, useFactory: (m: ModuleRef) => new CoreLifecycle(parts, m), inject: [ModuleRef] }],
      exports: exported,
    };
  }
}
