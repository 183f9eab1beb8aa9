import type { StoreCounts, StoreInspection, StoreInspector, StoreName } from '@rag/ports';

/** How thorough the start-up check is: SQLite quick_check (default), integrity_check, or none (schema and counts only). */
export type IntegrityMode = 'quick' | 'full' | 'off';

export interface IntegrityOptions {
  mode: IntegrityMode;
  /** Start even when the registry is empty beside a keyword index or vector store holding chunks (RAG_ALLOW_EMPTY_REGISTRY). */
  allowEmptyRegistry: boolean;
  /** How long readiness reuses the store counts (ms; default 30 000). */
  countsTtlMs?: number;
}

export interface IntegrityProblem {
  store: StoreName | 'consistency';
  file?: string;
  /** One line naming the file. */
  message: string;
}

export interface IntegrityReport {
  ok: boolean;
  problems: IntegrityProblem[];
  warnings: string[];
  counts: StoreCounts;
  mode: IntegrityMode;
  checked_at: string;
  ms: number;
}

/**
 * Tolerance of the registry-vs-index count check. The indexer writes a version's chunks to the vector store and the
 * keyword index before the registry records them, and removes the previous version's chunks after, so while documents
 * are being indexed (or after a crash in between, until their redelivery) the stores hold a few documents' chunks more
 * or fewer than the registry says. A difference within max(100, 2 %) of the registry's indexed chunks is normal; beyond
 * it is a warning; a store holding under half (or over twice) what the registry says, 100 chunks or more apart, is
 * grossly off: chunks were lost (or the registry was), and readiness fails — except a store holding *more* while the
 * registry has documents queued or in processing: those documents' chunks may be written already (the indexer writes a
 * whole batch of documents to the stores before the registry records them), so early in a bulk ingestion, or after a
 * crash during one, the stores can hold a batch's chunks beside a registry that counts only a few. That is a warning:
 * the redelivered documents make the counts meet. (Found 2026-12-06: a platform killed with SIGKILL early in its first
 * ingestion — 164 vectors, 4 chunks recorded, 596 documents in flight — refused to restart, telling the operator to
 * restore a backup; readiness could fail the same way during such an ingestion.)
 */
export const COUNT_TOLERANCE = { absolute: 100, relative: 0.02 } as const;

function describeCount(n: number, what: string, file?: string): string {
  return `${file ?? what} holds ${n} ${what}`;
}

/** The cross-store consistency rules over store sizes (pure). */
export function assessCounts(counts: StoreCounts, allowEmptyRegistry: boolean): { problems: IntegrityProblem[]; warnings: string[] } {
  const problems: IntegrityProblem[] = [];
  const warnings: string[] = [];
  const { registryDocuments: docs, registryIndexedChunks: indexed, registryPendingDocuments: pending, keywordChunks: kw, vectorRecords: vec } = counts;
  const stores: [string, number, string | undefined][] = [];
  if (kw !== null) stores.push(['chunks', kw, counts.files.keyword]);
  if (vec !== null) stores.push(['vectors', vec, counts.files.vectors]);
  if (docs === 0) {
    const holding = stores.filter(([, n]) => n > 0);
    if (holding.length > 0) {
      const registry = counts.files.registry ?? 'the registry';
      const message =
        `${registry} holds no documents, but ${holding.map(([w, n, f]) => describeCount(n, w, f)).join(' and ')}: ` +
        'the registry was lost or truncated; restore it from a backup, or set RAG_ALLOW_EMPTY_REGISTRY=true to start with an empty registry ' +
        'anyway (the indexed chunks stay invisible to queries until their documents are ingested again)';
      if (allowEmptyRegistry) warnings.push(`${message} [allowed by RAG_ALLOW_EMPTY_REGISTRY]`);
      else problems.push({ store: 'consistency', ...(counts.files.registry ? { file: counts.files.registry } : {}), message });
    }
    return { problems, warnings };
  }
  if (indexed === null) return { problems, warnings };
  const tolerance = Math.max(COUNT_TOLERANCE.absolute, Math.ceil(COUNT_TOLERANCE.relative * indexed));
  for (const [what, n, file] of stores) {
    const diff = n - indexed;
    if (Math.abs(diff) <= tolerance) continue;
    const line = `${file ?? what} holds ${n} ${what} where the registry counts ${indexed} indexed chunks (${diff > 0 ? '+' : ''}${diff})`;
    const inFlight = diff > 0 && (pending ?? 0) > 0;
    const gross = Math.abs(diff) >= COUNT_TOLERANCE.absolute && (n < indexed / 2 || n > indexed * 2);
    if (inFlight) {
      warnings.push(`${line}: ${pending} documents are queued or being indexed, whose chunks may be in the store before the registry records them`);
    } else if (gross) {
      problems.push({
        store: 'consistency',
        ...(file ? { file } : {}),
        message: `${line}: the stores disagree grossly (chunks or registry rows were lost); restore the data folder from a backup or ingest the documents again`,
      });
    } else {
      warnings.push(`${line}: more than the ${tolerance} chunks that documents being indexed explain`);
    }
  }
  return { problems, warnings };
}

/** `counts` with the counts of damaged stores unknown (null): counts from a damaged file mean nothing. */
function withoutDamaged(counts: StoreCounts, damaged: ReadonlySet<string>): StoreCounts {
  return {
    ...counts,
    ...(damaged.has('registry') ? { registryDocuments: null, registryIndexedChunks: null, registryPendingDocuments: null } : {}),
    ...(damaged.has('keyword') ? { keywordChunks: null } : {}),
    ...(damaged.has('vectors') ? { vectorRecords: null } : {}),
  };
}

/** The verdict over one inspection (pure): every damaged file and every consistency problem. */
export function assessInspection(inspection: StoreInspection, opts: Pick<IntegrityOptions, 'mode' | 'allowEmptyRegistry'>, now = new Date()): IntegrityReport {
  const problems: IntegrityProblem[] = inspection.files
    .filter((f) => !f.ok)
    .map((f) => ({ store: f.store, file: f.file, message: f.problem ?? `${f.file} failed its check` }));
  // Counts from a damaged file mean nothing; the consistency rules only run over readable stores.
  const damaged = new Set(problems.map((p) => p.store));
  const counts = withoutDamaged(inspection.counts, damaged);
  const c = assessCounts(counts, opts.allowEmptyRegistry);
  problems.push(...c.problems);
  return { ok: problems.length === 0, problems, warnings: c.warnings, counts, mode: opts.mode, checked_at: now.toISOString(), ms: inspection.ms };
}

export interface Readiness {
  ready: boolean;
  problems: IntegrityProblem[];
  warnings: string[];
  /** The start-up check whose result readiness reuses. */
  integrity: Pick<IntegrityReport, 'mode' | 'checked_at' | 'ms'> | null;
  counts: StoreCounts | null;
}

/**
 * Integrity of the embedded stores: the full check once at start-up (which refuses to start on a problem), and a cheap
 * readiness verdict afterwards: that start-up result, each file still being a SQLite file, corruption hit by queries
 * since, and the count consistency over counts at most `countsTtlMs` old.
 */
export class StoreIntegrityService {
  private startup: IntegrityReport | null = null;
  private cachedCounts: { at: number; counts: StoreCounts } | null = null;

  constructor(
    private readonly inspector: StoreInspector,
    private readonly opts: IntegrityOptions,
  ) {}

  /** Runs the start-up check and keeps its result for readiness. */
  async check(): Promise<IntegrityReport> {
    const inspection = await this.inspector.inspect(this.opts.mode === 'off' ? 'none' : this.opts.mode);
    this.startup = assessInspection(inspection, this.opts);
    this.cachedCounts = { at: Date.now(), counts: this.startup.counts };
    return this.startup;
  }

  get lastReport(): IntegrityReport | null {
    return this.startup;
  }

  async readiness(): Promise<Readiness> {
    const problems: IntegrityProblem[] = [...(this.startup?.problems ?? [])];
    for (const f of await this.inspector.ping()) {
      if (!f.ok) problems.push({ store: f.store, file: f.file, message: f.problem ?? `${f.file} failed its check` });
    }
    const ttl = this.opts.countsTtlMs ?? 30_000;
    if (!this.cachedCounts || Date.now() - this.cachedCounts.at > ttl) this.cachedCounts = { at: Date.now(), counts: await this.inspector.counts() };
    const counts = this.cachedCounts.counts;
    const damaged = new Set(problems.map((p) => p.store));
    const c = assessCounts(withoutDamaged(counts, damaged), this.opts.allowEmptyRegistry);
    for (const p of c.problems) if (!problems.some((q) => q.message === p.message)) problems.push(p);
    return {
      ready: problems.length === 0,
      problems,
      warnings: c.warnings,
      integrity: this.startup ? { mode: this.startup.mode, checked_at: this.startup.checked_at, ms: this.startup.ms } : null,
      counts,
    };
  }
}
