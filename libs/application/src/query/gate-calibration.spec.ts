import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { evidenceScore, GATE_PROBES, LexicalMemo, type GateCalibration } from '@rag/domain';
import { inStage, metrics } from '@rag/platform';
import type { GateCalibrationStore } from '@rag/ports';
import { GateCalibrator, type CalibrationIndex } from './gate-calibration';
import { GeneratorService } from './generator.service';

/** A store in memory (the file store has its own spec in libs/adapters). */
class MemoryStore implements GateCalibrationStore {
  readonly puts: GateCalibration[] = [];
  private readonly byTenant = new Map<string, GateCalibration>();
  async get(tenant: string) {
    return this.byTenant.get(tenant) ?? null;
  }
  async put(c: GateCalibration) {
    this.puts.push(c);
    this.byTenant.set(c.tenant, c);
  }
}

/**
 * A tenant index over a list of texts: sampling draws texts with the given random function; retrieval ranks them
 * by lexical coverage (a stand-in for the query path's hybrid retrieval at the port boundary, enough to exercise
 * the calibration's logic; the real path is measured by `rag eval`).
 */
function textIndex(texts: string[], counters = { retrieve: 0, sample: 0 }): CalibrationIndex & { texts: string[]; counters: typeof counters } {
  const memo = new LexicalMemo({ maxEntries: 10_000, maxChars: 50_000_000 });
  return {
    texts,
    counters,
    async size() {
      return texts.length;
    },
    async sample(_tenant, n, random) {
      counters.sample++;
      return Array.from({ length: Math.min(n, texts.length) }, () => texts[Math.floor(random() * texts.length)]!);
    },
    async retrieve(_tenant, question) {
      counters.retrieve++;
      return texts
        .map((text) => ({ text, score: evidenceScore(question, text, memo) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 5);
    },
    // A stand-in for the top hit's dense similarity: the best lexical coverage (the real one is measured by `rag eval`).
    async denseTop(_tenant, question) {
      return Math.max(0, ...texts.map((t) => evidenceScore(question, t, memo)));
    },
  };
}

const cranfieldDir = join(__dirname, '..', '..', '..', '..', '..', 'shared', 'eval', 'cranfield');
const readCorpus = (dir: string, n: number) =>
  readFileSync(join(dir, 'corpus.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .slice(0, n)
    .map((l) => {
      const d = JSON.parse(l) as { title?: string; text: string };
      return `${d.title ?? ''}\n${d.text}`;
    });

const aero = [
  'The boundary layer on a flat plate at supersonic speeds: the laminar boundary layer thickness grows with the Mach number.',
  'Heat transfer to a hemisphere cylinder at Mach 6 in a hypersonic wind tunnel; stagnation point heating rates compared with theory.',
  'Flutter of swept wings: aeroelastic models of heated aircraft must obey similarity laws in the wind tunnel.',
  'Lift increase of a wing in a propeller slipstream measured at different angles of attack.',
  'Shock wave boundary layer interaction on a compression corner at hypersonic Mach numbers.',
  'Pressure distribution on a slender cone in supersonic flow compared with linearised theory.',
];

describe('GateCalibrator', () => {
  // sleep: immediate (the settling wait is counted, not timed); settleMs only names the wait.
  const sleeps: number[] = [];
  const opts = { fallbackThreshold: 0.45, sampleSize: 50, pseudoQueries: 20, settleMs: 5000, sleep: async (ms: number) => void sleeps.push(ms) };

  it('never makes a question wait: the first one gets the fallback threshold, the calibration is made in the background and stored', async () => {
    const store = new MemoryStore();
    const index = textIndex(aero);
    const cal = new GateCalibrator(index, store, opts);
    const first = await cal.settingsFor('acme', 'boundary layer thickness at supersonic speeds');
    expect(first).toEqual({ threshold: 0.45, calibrated: false });
    await cal.settled('acme');
    expect(store.puts).toHaveLength(1);
    const s = await cal.settingsFor('acme', 'boundary layer thickness at supersonic speeds');
    expect(s.calibrated).toBe(true);
    const stored = store.puts[0]!;
    expect(stored.tenant).toBe('acme');
    expect(stored.chunks).toBe(aero.length);
    expect(stored.probes.latin + stored.probes.cjk).toBe(GATE_PROBES.length);
    expect(stored.pseudo.latin.n).toBeGreaterThan(0);
    expect(s.threshold).toBe(0.5);
    expect(s.calibration).toEqual(stored.scripts.latin);
    expect(s.denseTop).toBeGreaterThan(0);
    expect(Object.keys(s.termWeights ?? {})).toEqual(expect.arrayContaining(['boundary', 'layer', 'supersonic']));
    expect(s.termWeights!['supersonic']).toBeGreaterThan(0);
    // Served from memory afterwards: no new retrievals.
    const retrievals = index.counters.retrieve;
    const zh = await cal.settingsFor('acme', '边界层的厚度是多少');
    expect(zh.calibration).toEqual(stored.scripts.cjk);
    expect(index.counters.retrieve).toBe(retrievals);
  });

  it('starts calibrating only once ingestion has settled (the index size held still for settleMs)', async () => {
    const store = new MemoryStore();
    const texts = aero.slice(0, 2);
    const index = textIndex(texts);
    const sizesAtCalibration: number[] = [];
    const ingesting = { ...index, sample: async (t: string, n: number, r: () => number) => (sizesAtCalibration.push(texts.length), index.sample(t, n, r)) };
    const waits: number[] = [];
    // each settling wait, two more documents arrive, until the corpus is complete
    const sleep = async (ms: number) => {
      waits.push(ms);
      if (texts.length < aero.length) texts.push(...aero.slice(texts.length, texts.length + 2));
    };
    const cal = new GateCalibrator(ingesting, store, { ...opts, sleep });
    await cal.settingsFor('t', 'flutter');
    await cal.settled('t');
    expect(waits.length).toBeGreaterThanOrEqual(3);
    expect(waits.every((w) => w === 5000)).toBe(true);
    expect(sizesAtCalibration).toEqual([aero.length]);
    expect(store.puts).toHaveLength(1);
    expect(store.puts[0]!.chunks).toBe(aero.length);
  });

  it('lets other work run between its retrievals, even when the index answers without I/O', async () => {
    const index = textIndex(aero); // answers in microtasks only, like the embedded stores
    const cal = new GateCalibrator(index, new MemoryStore(), opts);
    const ticks: number[] = [];
    const tick = () => {
      ticks.push(index.counters.retrieve);
      if (ticks.length < 50) setImmediate(tick);
    };
    setImmediate(tick);
    await cal.ensure('t');
    const total = index.counters.retrieve;
    expect(total).toBeGreaterThan(GATE_PROBES.length - 1);
    // Macrotasks queued while calibrating ran in the middle of it, not only after its last retrieval.
    expect(ticks.some((n) => n > 0 && n < total)).toBe(true);
  });

  it('keeps its retrievals out of the stage latency histogram (background work)', async () => {
    const index = textIndex(aero);
    const timed = { ...index, retrieve: (t: string, q: string) => inStage('retrieve', {}, () => index.retrieve(t, q)) };
    const count = async () => ((await metrics.stageLatency.get()).values.find((v) => v.metricName === 'rag_stage_duration_seconds_count' && v.labels.stage === 'retrieve')?.value ?? 0);
    const before = await count();
    const cal = new GateCalibrator(timed, new MemoryStore(), opts);
    await cal.ensure('t');
    expect(index.counters.retrieve).toBeGreaterThan(GATE_PROBES.length - 1);
    expect(await count()).toBe(before);
    // the same retrieval outside the calibration is timed
    await timed.retrieve('t', 'flutter');
    expect(await count()).toBe(before + 1);
  });

  it('reads a stored calibration instead of calibrating again (a restart)', async () => {
    const store = new MemoryStore();
    await new GateCalibrator(textIndex(aero), store, opts).ensure('acme');
    const index = textIndex(aero);
    const again = new GateCalibrator(index, store, opts);
    const s = await again.settingsFor('acme', 'flutter of swept wings');
    expect(s.calibrated).toBe(true);
    await again.settled('acme');
    expect(index.counters.retrieve).toBe(0);
    expect(store.puts).toHaveLength(1);
  });

  it('recalibrates in the background once the index grew by the growth factor, serving the old calibration meanwhile', async () => {
    let now = 0;
    const store = new MemoryStore();
    const texts = aero.slice(0, 5);
    const index = textIndex(texts);
    const cal = new GateCalibrator(index, store, { ...opts, now: () => now, checkIntervalMs: 1000 });
    await cal.ensure('t');
    expect(store.puts).toHaveLength(1);
    // Within the check interval nothing is checked; after it, an unchanged index is not recalibrated.
    now = 500;
    texts.push('Transition of the boundary layer on a cone.', 'Hypersonic flow over a blunt body.');
    await cal.settingsFor('t', 'flutter');
    await cal.settled('t');
    expect(store.puts).toHaveLength(1);
    texts.splice(5);
    now = 1500;
    await cal.settingsFor('t', 'flutter');
    await cal.settled('t');
    expect(store.puts).toHaveLength(1);
    // Grown by 40 %: the old calibration answers while the new one is made in the background.
    texts.push('Transition of the boundary layer on a cone.', 'Hypersonic flow over a blunt body.');
    now = 3000;
    const served = await cal.settingsFor('t', 'flutter');
    expect(served.calibration).toEqual(store.puts[0]!.scripts.latin);
    await cal.settled('t');
    expect(store.puts).toHaveLength(2);
    expect(store.puts[1]!.chunks).toBe(texts.length);
  });

  it('does not calibrate an empty index (fallback threshold), and calibrates once it has content', async () => {
    let now = 0;
    const texts: string[] = [];
    const store = new MemoryStore();
    const cal = new GateCalibrator(textIndex(texts), store, { ...opts, now: () => now, checkIntervalMs: 10 });
    expect(await cal.settingsFor('t', 'anything at all')).toEqual({ threshold: 0.45, calibrated: false });
    await cal.settled('t');
    expect(store.puts).toHaveLength(0);
    texts.push(...aero);
    now = 100;
    expect((await cal.settingsFor('t', 'flutter of swept wings')).calibrated).toBe(false);
    await cal.settled('t');
    expect(store.puts).toHaveLength(1);
    expect((await cal.settingsFor('t', 'flutter of swept wings')).calibrated).toBe(true);
  });

  it('falls back to the fixed threshold when the index cannot be read, and shares one calibration between concurrent callers', async () => {
    const broken: CalibrationIndex = {
      size: async () => {
        throw new Error('index down');
      },
      sample: async () => [],
      retrieve: async () => [],
    };
    const b = new GateCalibrator(broken, new MemoryStore(), opts);
    expect(await b.settingsFor('t', 'q')).toEqual({ threshold: 0.45, calibrated: false });
    await b.settled('t');
    const store = new MemoryStore();
    const index = textIndex(aero);
    const cal = new GateCalibrator(index, store, opts);
    await Promise.all([cal.settingsFor('t', 'flutter'), cal.ensure('t'), cal.settingsFor('t', 'heat transfer'), cal.ensure('t')]);
    await cal.settled('t');
    expect(store.puts).toHaveLength(1);
    expect(index.counters.sample).toBe(1);
  });

  it('stop() (shutdown) ends a background check that is still settling or calibrating: no read of the closing stores, no warning', async () => {
    const closed = { yes: false };
    const guard = <T>(v: T): T => {
      if (closed.yes) throw new Error('SqliteRegistry(/data/registry.db) is closed');
      return v;
    };
    const texts = aero.slice(0, 2);
    const base = textIndex(texts);
    const index: CalibrationIndex & { counters: typeof base.counters } = {
      counters: base.counters,
      size: async (t) => guard(await base.size(t)),
      sample: async (t, n, r) => guard(await base.sample(t, n, r)),
      retrieve: async (t, q) => guard(await base.retrieve(t, q)),
    };
    // Settling: the index still grows at the first wait; the process shuts down (stop, then its stores close) during it.
    const sleep = async () => {
      texts.push(...aero.slice(2, 4));
      cal.stop();
      closed.yes = true;
    };
    const store = new MemoryStore();
    const cal: GateCalibrator = new GateCalibrator(index, store, { ...opts, sleep });
    const warn = vi.spyOn((cal as unknown as { log: { warn: (...a: unknown[]) => void } }).log, 'warn');
    await cal.settingsFor('t', 'flutter');
    await cal.settled('t');
    expect(store.puts).toHaveLength(0);
    expect(index.counters.sample).toBe(0);
    expect(warn).not.toHaveBeenCalled();

    // Calibrating: stop between two probes — the rest of the probes are not asked, nothing stored, no warning.
    closed.yes = false;
    const store2 = new MemoryStore();
    const index2 = textIndex(aero);
    let asked = 0;
    const stopping: CalibrationIndex = {
      ...index2,
      retrieve: async (t, q) => {
        if (++asked === 3) cal2.stop();
        return index2.retrieve(t, q);
      },
    };
    const cal2 = new GateCalibrator(stopping, store2, opts);
    const warn2 = vi.spyOn((cal2 as unknown as { log: { warn: (...a: unknown[]) => void } }).log, 'warn');
    await cal2.settingsFor('t', 'flutter');
    await cal2.settled('t');
    expect(asked).toBe(3);
    expect(store2.puts).toHaveLength(0);
    expect(warn2).not.toHaveBeenCalled();
  });

  it.runIf(existsSync(cranfieldDir))('on real Cranfield abstracts: probes mostly under the threshold, the index’s own questions over it', async () => {
    const texts = readCorpus(cranfieldDir, 150);
    const cal = new GateCalibrator(textIndex(texts), new MemoryStore(), { fallbackThreshold: 0.45, sampleSize: 100, pseudoQueries: 30 });
    const c = (await cal.ensure('default'))!;
    const latin = c.scripts.latin!;
    // the index's own pseudo-queries sit well above the probes: most pass the calibrated gate
    expect(c.pseudo.latin.q50).toBeGreaterThan(0.5);
    expect(latin.lexical.q95).toBeGreaterThan(latin.lexical.q50);
    // no Chinese text in the index: Chinese probes find nothing lexically
    expect(c.scripts.cjk!.lexical).toEqual({ q50: 0, q95: 0 });
  });
});

describe('GATE_PROBES and the out-of-domain measurement sets', () => {
  it('share no question (the probes calibrate; the sets measure)', () => {
    const dir = join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'ood');
    const norm = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
    const probes = new Set(GATE_PROBES.map(norm));
    const sets = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
    expect(sets.length).toBeGreaterThanOrEqual(5); // cranfield, cmrc2018-trial, cisi, cacm, med, and any set added later
    for (const f of sets) {
      for (const line of readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l.trim())) {
        const q = JSON.parse(line) as { text: string };
        expect(probes.has(norm(q.text)), `${f}: ${q.text}`).toBe(false);
      }
    }
  });
});

describe('GeneratorService with a calibrated gate', () => {
  const chunk = (doc: string, text: string, score: number) => ({ chunk_id: `${doc}#v1#0`, document_id: doc, title: 'T', text, score, heading_path: [] });

  it('asks the gate settings of the sources’ tenant and decides with them', async () => {
    const asked: string[] = [];
    const calibration = { lexical: { q50: 0.1, q95: 0.4 }, dense: { q50: 0.5, q95: 0.6 }, target: 1.3 };
    const gate = {
      async settingsFor(tenant: string, question: string) {
        asked.push(tenant);
        // a strong dense match for the on-topic question, a probe-like one for the other
        const denseTop = question.includes('wing') ? 0.85 : 0.52;
        return { threshold: 0.5, termWeights: { wing: 2, root: 3, carry: 1, capital: 6, france: 6 }, unseenWeight: 6, calibration, denseTop, calibrated: true };
      },
    };
    const g = new GeneratorService(null, { refusalThreshold: 0.45, llmTimeoutMs: 1000, maxSources: 5, gate });
    const sources = [chunk('acme#wings', 'The wing root carries the bending load.', 2), chunk('acme#other', 'Spars take shear.', 1)];
    const on = await g.generate('what does the wing root carry', sources);
    expect(on.refused).toBe(false);
    expect(on.evidence).toBeGreaterThanOrEqual(0.5);
    const off = await g.generate('capital of france', sources);
    expect(off.refused).toBe(true);
    expect(off.evidence).toBeLessThan(0.5);
    expect(asked).toEqual(['acme', 'acme']);
    // no sources: refused without asking for settings
    expect((await g.generate('what does the wing root carry', [])).refused).toBe(true);
    expect(asked).toHaveLength(2);
  });
});
