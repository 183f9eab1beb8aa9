import { join } from 'node:path';
import { Inject, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { createWorkerGrounding, FileGateCalibrationStore } from '@rag/adapters';
import { GateCalibrator, GeneratorService, InProcessGrounding, registryCalibrationSample, type GeneratorOptions, type QueryEmbeddingCall, type RetrieveCall, type VerifierEmbed } from '@rag/application';
import { normalizeQuery } from '@rag/domain';
import type { AppConfig } from '@rag/platform';
import { GROUNDING, KEYWORD_INDEX, LLM, QUERY_TRANSLATOR, REGISTRY, VECTOR_STORE, type Grounding, type KeywordIndex, type Llm, type QueryTranslator, type Registry, type VectorStore } from '@rag/ports';
import { CONFIG, GATE_CALIBRATION, GENERATE_CALL, QUERY_EMBEDDING, RETRIEVE_CALL } from '../core/tokens';
import { queryTranslatorProvider, QueryTranslatorWarmUp } from '../core/query-translation';

/** The gate calibration as the generator, the module's start-up and `rag eval` see it (GATE_CALIBRATION). */
export interface GateCalibrationHandle {
  settingsFor: NonNullable<GeneratorOptions['gate']>['settingsFor'];
  /** The tenant's calibration, made now if missing or stale (`rag eval` before measuring; questions never wait). */
  ensure(tenant: string): Promise<void>;
  /** Checks these tenants (and every one asked) in the background on a timer (see GateCalibrator.watch). */
  watch(...tenants: string[]): void;
  stop(): void;
}

/**
 * The relevance gate's per-tenant calibration (issue 15), when RAG_GATE_CALIBRATION=auto and this process also holds
 * the index and the retriever (embedded mode): resolved on first use, since the providers live in sibling modules.
 * A process without them (the distributed generator) gates with RAG_REFUSAL_THRESHOLD; calibrations are kept as JSON
 * files under RAG_DATA_DIR/gate/. Calibrating runs in the background after ingestion settles (GateCalibrator); the
 * default tenant is watched from start-up. Not built: a shared PostgreSQL store for the distributed services.
 */
function calibratedGate(moduleRef: ModuleRef, c: AppConfig): GateCalibrationHandle | null {
  if (c.RAG_GATE_CALIBRATION !== 'auto') return null;
  let calibrator: GateCalibrator | null | undefined;
  const resolve = (): GateCalibrator | null => {
    if (calibrator !== undefined) return calibrator;
    try {
      const registry = moduleRef.get<Registry>(REGISTRY, { strict: false });
      const keywords = moduleRef.get<KeywordIndex>(KEYWORD_INDEX, { strict: false });
      const embedding = moduleRef.get<QueryEmbeddingCall>(QUERY_EMBEDDING, { strict: false });
      const retriever = moduleRef.get<RetrieveCall>(RETRIEVE_CALL, { strict: false });
      const vectors = moduleRef.get<VectorStore>(VECTOR_STORE, { strict: false });
      calibrator = new GateCalibrator(
        {
          ...registryCalibrationSample(registry, keywords),
          // The query path's retrieval (hybrid, RAG_TOP_K sources, unrestricted within the tenant), as the gate sees it.
          retrieve: async (tenant, question) => {
            const query = normalizeQuery(question);
            const vector = await embedding.embedQuery(query);
            const r = await retriever.retrieve({ query, vector, top_k: c.RAG_TOP_K, candidates: c.RAG_CANDIDATES, mode: 'hybrid', scope: { tenant } });
            return r.results.map((x) => ({ text: x.parent_text ?? x.text, score: x.score }));
          },
          // The gate's dense signal: the top hit's raw similarity (one more query embedding and a k=1 vector search).
          denseTop: async (tenant, question) => {
            const vector = await embedding.embedQuery(normalizeQuery(question));
            const hits = await vectors.search({ vector, k: 1, scope: { tenant } });
            return hits[0]?.score ?? 0;
          },
        },
        new FileGateCalibrationStore(join(c.dataDir, 'gate')),
        { fallbackThreshold: c.RAG_REFUSAL_THRESHOLD },
      );
    } catch {
      calibrator = null;
    }
    return calibrator;
  };
  return {
    settingsFor: (tenant, question) => resolve()?.settingsFor(tenant, question) ?? Promise.resolve({ threshold: c.RAG_REFUSAL_THRESHOLD, calibrated: false }),
    ensure: async (tenant) => {
      await resolve()?.ensure(tenant);
    },
    watch: (...tenants) => resolve()?.watch(...tenants),
    stop: () => calibrator?.stop(),
  };
}

/**
 * The query embedder for the verifier's semantic support (RAG_VERIFY), when this process has one (embedded mode);
 * resolved on first use since it lives in a sibling module. The distributed generator has none: lexical support only.
 */
function verifierEmbed(moduleRef: ModuleRef): () => VerifierEmbed | undefined {
  let embed: VerifierEmbed | null | undefined;
  return () => {
    if (embed === undefined) {
      try {
        const e = moduleRef.get<QueryEmbeddingCall>(QUERY_EMBEDDING, { strict: false });
        embed = (text, signal) => e.embedQuery(text, signal);
      } catch {
        embed = null;
      }
    }
    return embed ?? undefined;
  };
}

/** generator: relevance gate, then the LLM (streamed) or the extractive answerer, citing [n]. */
@Module({
  providers: [
    queryTranslatorProvider,
    QueryTranslatorWarmUp,
    {
      // the gate's and the extractive answerer's text work: a worker pool (RAG_GENERATOR_WORKERS > 0) or in process
      provide: GROUNDING,
      useFactory: async (c: AppConfig): Promise<Grounding> => {
        const memo = { maxEntries: c.RAG_GENERATOR_MEMO_ENTRIES, maxChars: c.RAG_GENERATOR_MEMO_CHARS };
        if (c.RAG_GENERATOR_WORKERS === 0) return new InProcessGrounding(memo);
        return createWorkerGrounding({ workers: c.RAG_GENERATOR_WORKERS, timeoutMs: c.RAG_QUERY_WORKER_TIMEOUT_MS, memo });
      },
      inject: [CONFIG],
    },
    {
      provide: GATE_CALIBRATION,
      useFactory: (c: AppConfig, moduleRef: ModuleRef) => calibratedGate(moduleRef, c),
      inject: [CONFIG, ModuleRef],
    },
    {
      provide: GENERATE_CALL,
      useFactory: (llm: Llm | null, c: AppConfig, grounding: Grounding, moduleRef: ModuleRef, gate: GateCalibrationHandle | null, translator: QueryTranslator | null) =>
        new GeneratorService(
          llm,
          {
            refusalThreshold: c.RAG_REFUSAL_THRESHOLD,
            llmTimeoutMs: c.RAG_LLM_TIMEOUT_MS,
            maxSources: c.RAG_TOP_K,
            lexicalMemo: { maxEntries: c.RAG_GENERATOR_MEMO_ENTRIES, maxChars: c.RAG_GENERATOR_MEMO_CHARS },
            ...(gate ? { gate } : {}),
            verify: c.RAG_VERIFY,
            verifierEmbed: verifierEmbed(moduleRef),
            translator,
          },
          grounding,
        ),
      inject: [LLM, CONFIG, GROUNDING, ModuleRef, GATE_CALIBRATION, QUERY_TRANSLATOR],
    },
  ],
  exports: [GENERATE_CALL, GATE_CALIBRATION],
})
export class GeneratorModule implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @Inject(GROUNDING) private readonly grounding: Grounding,
    @Inject(GATE_CALIBRATION) private readonly gate: GateCalibrationHandle | null,
  ) {}

  /** The default tenant's gate is calibrated in the background once its index exists and ingestion settles. */
  onApplicationBootstrap(): void {
    this.gate?.watch('default');
  }

  /** Stops the worker threads (after the HTTP/gRPC servers stopped taking queries) and the calibration timer. */
  async onApplicationShutdown(): Promise<void> {
    this.gate?.stop();
    await this.grounding.close();
  }
}
