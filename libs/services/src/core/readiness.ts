import { Global, HttpException, Injectable, Module, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthCheckService, HealthIndicatorService, TerminusModule, type HealthCheckResult, type HealthIndicatorResult } from '@nestjs/terminus';
import { BUS, EMBEDDER, KEYWORD_INDEX, LLM, REGISTRY, RERANKER, VECTOR_STORE, type Bus, type Embedder, type KeywordIndex, type Llm, type Registry, type Reranker, type VectorStore } from '@rag/ports';
import { HttpDrain } from '../http-drain';
import type { Part } from './core.module';

/**
 * Longest one dependency check may take. Below the Helm readiness probe's timeoutSeconds (3 s), so a hanging store
 * turns the probe into a clear 503 naming it instead of a probe timeout.
 */
export const READY_CHECK_TIMEOUT_MS = 2_000;

/** One dependency's state: `up` or `down` with the reason, and how long the check took. */
export type ReadinessCheck = { status: 'up' | 'down'; message?: string; responseTime?: number } & Record<string, unknown>;

export interface Readiness {
  /** True when every dependency this process needs answered (and the process is not shutting down). */
  ok: boolean;
  /** Terminus's overall status: ok, error or shutting_down. */
  status: string;
  /** Per part of this process (bus, registry, vectors, keywords, embedder, reranker, llm). */
  checks: Record<string, ReadinessCheck>;
}

/** Nest's token for the parts a process was composed with (provided, not exported, by CoreModule.forRoot). */
const CORE_PARTS = 'CORE_PARTS';

/**
 * Readiness of this process: one @nestjs/terminus health indicator per part it was built with, each bounded by
 * READY_CHECK_TIMEOUT_MS, run in parallel by Terminus's HealthCheckService (which also reports `shutting_down` once
 * Nest starts its shutdown, so traffic drains away from a stopping pod).
 *
 * - bus: `lag()` — reads the log (embedded) or the broker's group offsets (Kafka), so it fails when the SQLite log is
 *   closed or the broker is unreachable;
 * - registry: `countByStatus()`; vectors and keywords: `count()` — a round trip to SQLite / Milvus / OpenSearch;
 * - embedder, reranker: the provider resolved, i.e. the model is loaded (the factories load it before Nest finishes
 *   starting); a process configured without a reranker reports `configured: false`, which is up;
 * - llm: configured or not, never down: without an LLM the generator still answers extractively (degraded `llm`).
 *
 * Used by GET /readyz of the seven stage services (standalone.ts) and meant for the gRPC health service (serving
 * only while `readiness().ok`).
 */
@Injectable()
export class ReadinessService {
  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    @Optional() private readonly drain?: HttpDrain,
  ) {}

  private get<T>(token: symbol): T | null {
    return this.moduleRef.get<T | null>(token, { strict: false });
  }

  /** What proves a part usable; throws (or exceeds the timeout) when it is not. */
  private probe(part: Part): () => Promise<Record<string, unknown> | void> {
    switch (part) {
      case 'bus':
        return async () => ({ backlog: (await this.get<Bus>(BUS)!.lag()).reduce((a, l) => a + l.lag, 0) });
      case 'registry':
        return async () => ({ documents: Object.values(await this.get<Registry>(REGISTRY)!.countByStatus()).reduce((a, n) => a + n, 0) });
      case 'vectors':
        return async () => ({ vectors: await this.get<VectorStore>(VECTOR_STORE)!.count() });
      case 'keywords':
        return async () => ({ chunks: await this.get<KeywordIndex>(KEYWORD_INDEX)!.count() });
      case 'embedder':
        return async () => {
          const e = this.get<Embedder>(EMBEDDER)!;
          return { model: e.modelId, dim: e.dim };
        };
      case 'reranker':
        return async () => {
          const r = this.get<Reranker | null>(RERANKER);
          return r ? { configured: true, model: r.id } : { configured: false };
        };
      case 'llm':
        return async () => ({ configured: this.get<Llm | null>(LLM) !== null });
    }
  }

  async readiness(): Promise<Readiness> {
    // Nest may run the HTTP drain (a shallower module's hook) before Terminus's own shutdown hook: ask it too.
    if (this.drain?.draining) return { ok: false, status: 'shutting_down', checks: {} };
    const parts = this.moduleRef.get<Part[]>(CORE_PARTS, { strict: false });
    const checks = parts.map(
      (part) => (): PromiseLike<HealthIndicatorResult> => this.indicators.check(part).attempt(this.probe(part)).withTimeout(READY_CHECK_TIMEOUT_MS),
    );
    let result: HealthCheckResult;
    try {
      result = await this.health.check(checks);
    } catch (e) {
      // Terminus throws ServiceUnavailableException carrying the result when a check is down or Nest is shutting down.
      if (!(e instanceof HttpException) || e.getStatus() !== 503) throw e;
      result = e.getResponse() as HealthCheckResult;
    }
    return { ok: result.status === 'ok', status: result.status, checks: (result.details ?? {}) as Record<string, ReadinessCheck> };
  }
}

/**
 * ReadinessService for every module of a process (global), over Terminus without its own logging: a failed probe is
 * answered with its reason, not written as an error log line every few seconds.
 */
@Global()
@Module({ imports: [TerminusModule.forRoot({ logger: false })], providers: [ReadinessService], exports: [ReadinessService] })
export class ReadinessModule {}

/** The body of GET /readyz from a readiness result: 200 `ready`, or 503 `not_ready` naming every failed dependency. */
export function readinessResponse(r: Readiness): { code: 200 | 503; body: Record<string, unknown> } {
  if (r.ok) return { code: 200, body: { status: 'ready', checks: r.checks } };
  const failed = Object.entries(r.checks).filter(([, c]) => c.status !== 'up');
  const error = r.status === 'shutting_down' ? 'shutting down' : failed.map(([part, c]) => `${part}: ${c.message ?? 'down'}`).join('; ');
  return { code: 503, body: { status: 'not_ready', error, checks: r.checks } };
}
