import { chunkId } from '@rag/contracts';
import {
  CALIBRATED_THRESHOLD,
  calibrateScript,
  calibrationStale,
  combinedEvidence,
  DEFAULT_CALIBRATION,
  GATE_PROBES,
  gateScriptOf,
  pseudoQuery,
  quantile,
  questionTermWeights,
  seededRandom,
  shouldRefuse,
  termStatsOf,
  unseenIdf,
  type CalibrationOptions,
  type GateCalibration,
  type GateScript,
  type ScriptCalibration,
} from '@rag/domain';
import { asBackgroundWork, inSpan, Logger, outsideTrace } from '@rag/platform';
import type { GateCalibrationStore, KeywordIndex, Registry } from '@rag/ports';

/** What the calibration reads of a tenant's index. */
export interface CalibrationIndex {
  /** Size of the tenant's index (documents visible to queries): a calibration is redone when it grew or shrank by `growth`. */
  size(tenant: string): Promise<number>;
  /** Up to `n` chunk texts drawn at random from the tenant's index (bounded cost: a sample, never a scan). */
  sample(tenant: string, n: number, random: () => number): Promise<string[]>;
  /** The sources the query path would hand the generator for `question` in the tenant's index (text = what the gate reads). */
  retrieve(tenant: string, question: string): Promise<{ text: string; score: number }[]>;
  /** The top hit's dense similarity for `question` in the tenant's index (raw vector-store score); absent: no dense signal. */
  denseTop?(tenant: string, question: string): Promise<number | undefined>;
}

/** How the gate is to judge one question: the threshold and, when the tenant is calibrated, the idf weights. */
export interface GateSettings {
  threshold: number;
  termWeights?: Record<string, number>;
  unseenWeight?: number;
  /** The index's calibration for the question's script, and the question's top dense similarity (see domain combinedEvidence). */
  calibration?: ScriptCalibration;
  denseTop?: number;
  /** Whether the threshold is the tenant's calibrated one (false: the default or an override). */
  calibrated: boolean;
}

export interface GateCalibratorOptions {
  /** Threshold before a tenant is calibrated, and for a script without enough probes (0.45, the former fixed gate). */
  fallbackThreshold: number;
  /** Chunks sampled for the term statistics and the pseudo-queries (default 300). */
  sampleSize?: number;
  /** Pseudo-queries drawn from the sample (default 60). */
  pseudoQueries?: number;
  /** Relative change of the index size that makes a calibration stale (default 0.2). */
  growth?: number;
  /** Least time between two size checks of one calibrated tenant (default 60 s); an uncalibrated one is checked every `settleMs`. */
  checkIntervalMs?: number;
  /**
   * Ingestion has settled when the index size held still this long (default 5 s): a calibration starts only then, so
   * that it samples the finished index and does not compete with an ongoing ingestion.
   */
  settleMs?: number;
  /** Threshold rule (domain DEFAULT_CALIBRATION). */
  rule?: CalibrationOptions;
  /** Probe questions (domain GATE_PROBES). */
  probes?: readonly string[];
  /** Seed of the sampling (default 1; a calibration is reproducible for an unchanged index). */
  seed?: number;
  now?: () => number;
  /** Waits `ms` (tests pass a fake; default a timer). */
  sleep?: (ms: number) => Promise<void>;
}

interface Signals {
  lexical: number;
  dense?: number;
}

interface Entry {
  cal: GateCalibration | null;
  checkedAt: number;
  /** Index size seen by the last check (a size unchanged since then needs no settling wait). */
  size?: number;
  job?: Promise<void>;
  /** Whether "not calibrated yet" was logged for this tenant. */
  told?: boolean;
}

/** Ends a calibration that `GateCalibrator.stop` interrupted (never stored, never logged as a failure). */
class CalibrationStopped extends Error {
  constructor() {
    super('gate calibration stopped');
  }
}

/**
 * The relevance gate's per-tenant calibration job (issue 15 item 1): samples the tenant's own chunks for term
 * statistics and pseudo-queries, asks the off-topic probes through retrieval (lexical estimate) and the vector store
 * (top dense similarity), and stores the resulting scales per script with the statistics (GateCalibrationStore). At
 * query time `settingsFor` hands the generator's gate the calibration of the question's script, the question's idf
 * weights and its top dense similarity (one more query embedding and a k = 1 vector search per question).
 *
 * Questions never wait for a calibration (issue 13): calibrating runs in the background, once ingestion has settled
 * (the index size unchanged for `settleMs`), when a tenant has none yet or its index grew or shrank by `growth`
 * (checked at most once per `checkIntervalMs`, triggered by its questions and by `watch`). Until a tenant has a
 * calibration its questions are gated with the fixed fallback threshold (logged once per tenant; `calibrated: false`).
 * The calibration's own retrievals run as background work (platform asBackgroundWork): traced in their own
 * `gate-calibration` trace, left out of the stage latency histogram the SLO dashboards read. An empty index is not
 * calibrated; a failed calibration is logged and the previous one (or the fallback) serves until the next check.
 */
export class GateCalibrator {
  private readonly log = new Logger('gate-calibration');
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<GateCalibration | null>>();
  private readonly opts: Required<Omit<GateCalibratorOptions, 'rule' | 'probes'>> & { rule: CalibrationOptions; probes: readonly string[] };
  private timer: ReturnType<typeof setInterval> | undefined;
  /**
   * Set by `stop` (shutdown): a background check or calibration still running ends at its next step instead of reading
   * stores that are closing. Before, one still settling after an ingestion read the closed registry and logged
   * "gate calibration failed … SqliteRegistry is closed" at every such shutdown.
   */
  private stopped = false;

  constructor(
    private readonly index: CalibrationIndex,
    private readonly store: GateCalibrationStore,
    opts: GateCalibratorOptions,
  ) {
    this.opts = {
      sampleSize: 300,
      pseudoQueries: 60,
      growth: 0.2,
      checkIntervalMs: 60_000,
      settleMs: 5_000,
      seed: 1,
      now: () => Date.now(),
      sleep: (ms) => new Promise((r) => setTimeout(r, ms).unref?.()),
      ...opts,
      rule: opts.rule ?? DEFAULT_CALIBRATION,
      probes: opts.probes ?? GATE_PROBES,
    };
  }

  /** The gate settings for a question asked in `tenant`'s index. Never throws, never waits for a calibration. */
  async settingsFor(tenant: string, question: string): Promise<GateSettings> {
    let cal: GateCalibration | null = null;
    try {
      cal = await this.current(tenant);
    } catch (e) {
      this.log.warn('gate calibration unavailable; using the fallback threshold', { tenant, error: String(e) });
    }
    if (!cal) return { threshold: this.opts.fallbackThreshold, calibrated: false };
    const weights = { termWeights: questionTermWeights(question, cal.stats), unseenWeight: unseenIdf(cal.stats) };
    const script = cal.scripts[gateScriptOf(question)];
    if (!script) return { threshold: this.opts.fallbackThreshold, ...weights, calibrated: false };
    let denseTop: number | undefined;
    if (script.dense && this.index.denseTop) {
      try {
        denseTop = await this.index.denseTop(tenant, question);
      } catch (e) {
        this.log.warn('dense similarity for the gate unavailable; gating on the lexical signal', { tenant, error: String(e) });
      }
    }
    return { threshold: CALIBRATED_THRESHOLD, ...weights, calibration: script, ...(denseTop !== undefined ? { denseTop } : {}), calibrated: true };
  }

  /**
   * The tenant's calibration as it stands (memory, else the store): never waits for one to be made. Starts a
   * background check when one is due (see the class comment).
   */
  async current(tenant: string): Promise<GateCalibration | null> {
    let entry = this.entries.get(tenant);
    if (!entry) {
      const stored = await this.store.get(tenant);
      entry = this.entries.get(tenant) ?? { cal: stored, checkedAt: -Infinity };
      this.entries.set(tenant, entry);
    }
    this.checkIfDue(tenant, entry);
    if (!entry.cal && !entry.told) {
      entry.told = true;
      this.log.info('relevance gate not calibrated yet for this tenant: the fixed fallback threshold applies until the background calibration is done', {
        tenant,
        threshold: this.opts.fallbackThreshold,
      });
    }
    return entry.cal;
  }

  /**
   * Checks the tenants this process knows (asked, or `watch`ed) every `checkIntervalMs` on a timer (unref'd: it never
   * keeps the process alive), so that an index that grew is recalibrated before its next question needs it.
   */
  watch(...tenants: string[]): void {
    this.stopped = false;
    for (const t of tenants) if (!this.entries.has(t)) void this.current(t).catch(() => undefined);
    if (this.timer) return;
    this.timer = setInterval(() => {
      for (const [tenant, entry] of this.entries) this.checkIfDue(tenant, entry);
    }, this.opts.checkIntervalMs);
    this.timer.unref?.();
  }

  /** Stops the timer of `watch` and any background check or calibration at its next step (shutdown). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Waits for the tenant's background check, if one runs (tests, shutdown). */
  async settled(tenant: string): Promise<void> {
    await this.entries.get(tenant)?.job;
  }

  /**
   * The tenant's calibration, made now when there is none (or it is stale) — for callers that must not measure before
   * it exists (`rag eval` after ingesting); questions use `settingsFor`, which never waits.
   */
  async ensure(tenant: string): Promise<GateCalibration | null> {
    await this.current(tenant);
    const entry = this.entries.get(tenant)!;
    await entry.job;
    const size = await this.index.size(tenant);
    if (size > 0 && (!entry.cal || calibrationStale(entry.cal, size, this.opts.growth))) {
      const cal = await this.calibrateOnce(tenant);
      if (cal) entry.cal = cal;
      entry.size = size;
      entry.checkedAt = this.opts.now();
    }
    return entry.cal;
  }

  private checkIfDue(tenant: string, entry: Entry): void {
    if (this.stopped) return;
    const now = this.opts.now();
    const interval = entry.cal ? this.opts.checkIntervalMs : Math.min(this.opts.checkIntervalMs, this.opts.settleMs);
    if (entry.job || now - entry.checkedAt < interval) return;
    entry.checkedAt = now;
    entry.job = this.refreshIfStale(tenant, entry).finally(() => {
      entry.job = undefined;
      entry.checkedAt = this.opts.now();
    });
  }

  /** Background: once the index size holds still, (re)calibrates a tenant without a calibration or with a stale one. */
  private async refreshIfStale(tenant: string, entry: Entry): Promise<void> {
    try {
      let size = await this.index.size(tenant);
      // Settling: a size that changed since the last check means ingestion may still run; wait until it holds still.
      while (size !== entry.size) {
        entry.size = size;
        if (entry.cal && !calibrationStale(entry.cal, size, this.opts.growth)) return;
        if (size === 0) return;
        await this.opts.sleep(this.opts.settleMs);
        if (this.stopped) return;
        size = await this.index.size(tenant);
      }
      if (this.stopped || size === 0 || (entry.cal && !calibrationStale(entry.cal, size, this.opts.growth))) return;
      const cal = await this.calibrateOnce(tenant);
      if (cal) entry.cal = cal;
    } catch (e) {
      if (e instanceof CalibrationStopped || this.stopped) {
        this.log.debug('gate calibration stopped (shutdown)', { tenant });
        return;
      }
      this.log.warn('gate calibration failed; keeping the previous calibration (or the fallback threshold)', { tenant, error: String(e) });
    }
  }

  /** One calibration per tenant at a time (concurrent first questions share it). */
  private calibrateOnce(tenant: string): Promise<GateCalibration | null> {
    let p = this.inflight.get(tenant);
    if (!p) {
      // Its own trace (one `gate-calibration` root span), not a few hundred retrieve spans inside a question's; and
      // background work, so that its retrievals stay out of the stage latency histogram (user-facing latency).
      p = asBackgroundWork('gate-calibration', () =>
        outsideTrace(() => inSpan('gate-calibration', { 'rag.tenant': tenant }, () => this.calibrate(tenant))),
      ).finally(() => this.inflight.delete(tenant));
      this.inflight.set(tenant, p);
    }
    return p;
  }

  /** Calibrates `tenant` now and stores the result; null (nothing stored) for an empty index. */
  async calibrate(tenant: string): Promise<GateCalibration | null> {
    const started = this.opts.now();
    const size = await this.index.size(tenant);
    if (size === 0) return null;
    const random = seededRandom(this.opts.seed);
    const texts = await this.index.sample(tenant, this.opts.sampleSize, random);
    if (texts.length === 0) return null;
    const stats = termStatsOf(texts);
    const unseenWeight = unseenIdf(stats);
    const signalsOf = async (question: string): Promise<Signals> => {
      // Let queued requests run between two probes. The embedded stores answer a retrieval without I/O, so without
      // this the whole calibration (≈ 70 probes + pseudo-queries) ran as one chain of microtasks: one 7.7 s stretch
      // of the event loop at 11k chunks under load (--cpu-prof of bench scale), i.e. a 7 s stall of every request.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.stopped) throw new CalibrationStopped();
      const sources = await this.index.retrieve(tenant, question);
      const lexical = shouldRefuse(question, sources, 0, { termWeights: questionTermWeights(question, stats), unseenWeight }).evidence;
      const dense = this.index.denseTop ? await this.index.denseTop(tenant, question) : undefined;
      return dense === undefined ? { lexical } : { lexical, dense };
    };
    const byScript = (): Record<GateScript, Signals[]> => ({ latin: [], cjk: [] });
    const probes = byScript();
    for (const q of this.opts.probes) probes[gateScriptOf(q)].push(await signalsOf(q));
    const pseudo = byScript();
    for (let i = 0; i < this.opts.pseudoQueries; i++) {
      const q = pseudoQuery(texts[Math.floor(random() * texts.length)]!, random);
      if (q) pseudo[gateScriptOf(q)].push(await signalsOf(q));
    }
    const scripts: Record<GateScript, ScriptCalibration | null> = {
      latin: calibrateScript(probes.latin, pseudo.latin, { minProbes: this.opts.rule.minProbes }),
      cjk: calibrateScript(probes.cjk, pseudo.cjk, { minProbes: this.opts.rule.minProbes }),
    };
    const r4 = (x: number) => (Number.isFinite(x) ? Math.round(x * 10000) / 10000 : 0);
    const pseudoSummary = (script: GateScript) => {
      const sc = scripts[script];
      const ev = sc ? pseudo[script].map((p) => combinedEvidence(p, sc)) : [];
      return { n: pseudo[script].length, q10: r4(quantile(ev, 0.1)), q50: r4(quantile(ev, 0.5)) };
    };
    const cal: GateCalibration = {
      version: 2,
      tenant,
      chunks: size,
      sampled: texts.length,
      scripts,
      probes: { latin: probes.latin.length, cjk: probes.cjk.length },
      pseudo: { latin: pseudoSummary('latin'), cjk: pseudoSummary('cjk') },
      stats,
      calibrated_at: new Date(this.opts.now()).toISOString(),
    };
    await this.store.put(cal);
    this.log.info('relevance gate calibrated', {
      tenant,
      size,
      sampled: texts.length,
      scripts: JSON.stringify(scripts),
      ms: this.opts.now() - started,
    });
    return cal;
  }
}

/**
 * The sample and the size of a tenant's index read through the registry (documents visible to queries) and the
 * keyword index (chunk texts by id): a few random windows of the registry's listing, one random chunk per document.
 */
export function registryCalibrationSample(registry: Registry, keywords: KeywordIndex): Pick<CalibrationIndex, 'size' | 'sample'> {
  const size = async (tenant: string) => (await registry.countByStatus(tenant)).indexed ?? 0;
  return {
    size,
    async sample(tenant, n, random) {
      const total = await size(tenant);
      if (total === 0 || n <= 0) return [];
      const window = 10;
      const ids = new Set<string>();
      const offsets = new Set<number>();
      const windows = Math.ceil(Math.min(n, total) / window);
      for (let i = 0; i < windows * 3 && offsets.size < windows; i++) offsets.add(Math.floor(random() * Math.max(1, total - window + 1)));
      // Random access needs offsets (a keyset cursor only walks forward). An offset read walks every earlier row, so
      // one sample costs O(index) — ≈ 20 ms per window at 300k documents — but a calibration is redone only after the
      // index grew or shrank by 20 %, so per indexed document this stays a constant cost.
      for (const offset of offsets) {
        const docs = await registry.list({ tenant, status: 'indexed', limit: window, offset });
        for (const d of docs) {
          if (d.active_version <= 0 || d.chunks <= 0) continue;
          ids.add(chunkId(d.document_id, d.active_version, Math.floor(random() * d.chunks)));
        }
      }
      const chunks = ids.size ? await keywords.getChunks([...ids].slice(0, n)) : [];
      return chunks.filter((c) => c.tenant === tenant).map((c) => (c.title && !c.text.startsWith(c.title) ? `${c.title}\n${c.text}` : c.text));
    },
  };
}
