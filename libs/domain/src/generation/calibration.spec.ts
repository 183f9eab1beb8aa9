import {
  calibrateScript,
  calibrationStale,
  combinedEvidence,
  DEFAULT_CALIBRATION,
  DEFAULT_TARGET,
  MIN_SPREAD,
  probeZ,
  Z_MAX,
  Z_FLOOR,
  DENSE_WEIGHT,
  gateScriptOf,
  idf,
  MAX_TERMS,
  pseudoQuery,
  quantile,
  questionTermWeights,
  seededRandom,
  tenantOfDocumentId,
  termDf,
  termStatsOf,
  unseenIdf,
} from './calibration';
import { GATE_PROBES } from './calibration-probes';

const texts = [
  'The boundary layer on a flat plate grows with the Reynolds number.',
  'Heat transfer in the laminar boundary layer at hypersonic speeds.',
  'Flutter of a swept wing in a wind tunnel.',
  '尤金袋鼠分布在澳大利亚南部地区。',
  '袋鼠是澳大利亚的代表动物。',
];

describe('termStatsOf / termDf / idf', () => {
  const stats = termStatsOf(texts);

  it('counts each term once per text: Latin tokens, CJK characters and CJK bigrams', () => {
    expect(stats.docs).toBe(5);
    expect(termDf(stats, 'boundary')).toBe(2);
    expect(termDf(stats, 'flutter')).toBe(1);
    expect(termDf(stats, 'sourdough')).toBe(0);
    expect(stats.df['袋鼠']).toBe(2);
    expect(stats.df['澳']).toBe(2);
  });

  it('takes a CJK word’s frequency from its rarest bigram (an upper bound) and a single character from itself', () => {
    expect(termDf(stats, '尤金袋鼠')).toBe(1); // 尤金 is in one text, 袋鼠 in two
    expect(termDf(stats, '袋鼠')).toBe(2);
    expect(termDf(stats, '鼠')).toBe(2);
    expect(termDf(stats, '熊猫')).toBe(0);
  });

  it('weighs rare and unseen words above common ones, never below 0.1', () => {
    expect(idf(stats, 'flutter')).toBeGreaterThan(idf(stats, 'boundary'));
    expect(idf(stats, 'sourdough')).toBeCloseTo(unseenIdf(stats));
    expect(idf(stats, 'sourdough')).toBeGreaterThan(idf(stats, 'flutter'));
    const everywhere = termStatsOf(Array.from({ length: 30 }, (_, i) => `wing ${i}`));
    expect(idf(everywhere, 'wing')).toBe(0.1);
  });

  it('gives a weight to every content token of a question (stop and question words dropped)', () => {
    const w = questionTermWeights('Explain the flutter of a sourdough wing', stats);
    expect(Object.keys(w).sort()).toEqual(['flutter', 'sourdough', 'wing']);
    expect(w['sourdough']).toBeGreaterThan(w['wing']!);
  });

  it('stays bounded: past MAX_TERMS the single-text terms go first', () => {
    const many = Array.from({ length: 40 }, (_, i) => `common${i % 2} ` + Array.from({ length: 50 }, (_, j) => `w${i}x${j}`).join(' '));
    const s = termStatsOf(many, 100);
    expect(Object.keys(s.df).length).toBeLessThanOrEqual(100);
    expect(s.df['common0']).toBe(20);
    expect(MAX_TERMS).toBeGreaterThan(10_000);
  });
});

describe('probeZ / combinedEvidence', () => {
  const cal = { lexical: { q50: 0.2, q95: 0.5 }, dense: { q50: 0.5, q95: 0.6 }, target: 1.3 };

  it('measures a signal in probe spreads: 0 at the probes’ median, 1 at their 95th percentile', () => {
    expect(probeZ(0.2, cal.lexical)).toBeCloseTo(0);
    expect(probeZ(0.5, cal.lexical)).toBeCloseTo(1);
    expect(probeZ(0.8, cal.dense)).toBeCloseTo(3);
    // a degenerate scale (every probe scored 0) still has a spread
    expect(probeZ(0.1, { q50: 0, q95: 0 })).toBeCloseTo(0.1 / MIN_SPREAD);
  });

  it('maps the mean z of the signals so that 0.5 is the target', () => {
    // lexical z = 1.3, dense z = 1.3 → mean 1.3 = target → 0.5
    expect(combinedEvidence({ lexical: 0.59, dense: 0.63 }, cal)).toBeCloseTo(0.5);
    // a strong dense match rescues weak lexical coverage (a long question), and the reverse
    expect(combinedEvidence({ lexical: 0.4, dense: 0.85 }, cal)).toBeGreaterThan(0.5);
    // …but one signal alone cannot carry it: with the other at the probes' median (z = 0) it counts at most Z_MAX spreads…
    expect(combinedEvidence({ lexical: 0.2, dense: 0.61 }, cal)).toBeCloseTo((DENSE_WEIGHT * 1.1) / (2 * 1.3));
    // …and with the other at or under the floor (no better than half the off-topic probes) the estimate stays under 0.5
    expect(combinedEvidence({ lexical: 0.2, dense: 5 }, cal)).toBeLessThan(0.5);
    expect(combinedEvidence({ lexical: 0.2 + 0.3 * Z_FLOOR, dense: 5 }, cal)).toBeCloseTo(0.5);
    expect(combinedEvidence({ lexical: 0.15, dense: 5 }, cal)).toBeLessThan(0.5);
    expect(combinedEvidence({ lexical: 0.9, dense: 0.45 }, cal)).toBeLessThan(0.5);
    expect(combinedEvidence({ lexical: 0.15, dense: 5 }, cal)).toBeCloseTo(0.5 + (probeZ(0.15, cal.lexical) - Z_FLOOR) / (2 * 1.3));
    // a long question: loose word coverage (z 0.7) with a close embedding (z 4, counted as Z_MAX) passes
    expect(combinedEvidence({ lexical: 0.41, dense: 0.9 }, cal)).toBeGreaterThan(0.5);
    expect(combinedEvidence({ lexical: 0.9, dense: 0.57 }, cal)).toBeGreaterThan(0.5);
    // each signal counts at most Z_MAX spreads (a dense z of 10 counts as Z_MAX)
    expect(combinedEvidence({ lexical: 0.2 + 0.3 * 1, dense: 0.5 + 0.1 * 10 }, { ...cal, target: 3 })).toBeCloseTo(((1 - DENSE_WEIGHT) * 1 + DENSE_WEIGHT * Z_MAX) / (2 * 3));
    // the dense signal weighs more: loose word coverage (z 0.1) with a close embedding (z 2.5) passes, the reverse does not
    expect(DENSE_WEIGHT).toBeGreaterThan(0.5);
    expect(combinedEvidence({ lexical: 0.2 + 0.3 * 0.1, dense: 0.5 + 0.1 * 2.5 }, cal)).toBeGreaterThan(0.5);
    expect(combinedEvidence({ lexical: 0.2 + 0.3 * 2.5, dense: 0.5 + 0.1 * 0.1 }, cal)).toBeLessThan(0.5);
    // off-topic: both at the probes' level
    expect(combinedEvidence({ lexical: 0.45, dense: 0.58 }, cal)).toBeLessThan(0.5);
    // without a dense value (or scale) the lexical z alone decides
    expect(combinedEvidence({ lexical: 0.59 }, cal)).toBeCloseTo(0.5);
    expect(combinedEvidence({ lexical: 0.59, dense: 0.9 }, { lexical: cal.lexical, target: 1.3 })).toBeCloseTo(0.5);
    expect(combinedEvidence({ lexical: 5, dense: 5 }, cal)).toBe(1);
    expect(combinedEvidence({ lexical: 0.2 + 0.3 * 1.4, dense: 0.5 + 0.1 * 1.4 }, { ...cal, target: 2 })).toBeCloseTo(1.4 / 4);
    expect(combinedEvidence({ lexical: 0, dense: 0 }, cal)).toBe(0);
  });
});

describe('calibrateScript', () => {
  const probes = Array.from({ length: 40 }, (_, i) => ({ lexical: i / 100, dense: 0.4 + i / 100 }));

  it('takes the probes’ median and 95th percentile of each signal, with the default target', () => {
    const c = calibrateScript(probes, [])!;
    expect(c.lexical).toEqual({ q50: 0.19, q95: 0.37 });
    expect(c.dense).toEqual({ q50: 0.59, q95: 0.77 });
    expect(c.target).toBe(DEFAULT_TARGET);
  });

  it('has no dense scale when a probe lacks the dense signal, and is null with too few probes', () => {
    expect(calibrateScript([...probes, { lexical: 0.1 }], [])!.dense).toBeUndefined();
    expect(calibrateScript(probes.slice(0, 5), [])).toBeNull();
  });

  it('lowers the target (not under 1) so that 90 % of the index’s own pseudo-queries pass', () => {
    const high = Array.from({ length: 20 }, () => ({ lexical: 0.9, dense: 0.9 }));
    expect(calibrateScript(probes, high)!.target).toBe(DEFAULT_TARGET);
    const modest = Array.from({ length: 20 }, () => ({ lexical: 0.19 + 1.1 * 0.18, dense: 0.59 + 1.1 * 0.18 })); // z = 1.1
    expect(calibrateScript(probes, modest)!.target).toBeCloseTo(1.1, 3);
    const low = Array.from({ length: 20 }, () => ({ lexical: 0.2, dense: 0.6 }));
    expect(calibrateScript(probes, low)!.target).toBe(1);
  });
});

describe('quantile', () => {
  it('is the nearest-rank quantile', () => {
    expect(quantile([3, 1, 2, 4], 0.5)).toBe(2);
    expect(quantile([3, 1, 2, 4], 1)).toBe(4);
    expect(quantile([3, 1, 2, 4], 0)).toBe(1);
    expect(quantile([], 0.5)).toBeNaN();
  });
});

describe('calibrationStale', () => {
  it('is stale once the index grew or shrank by the growth factor', () => {
    expect(calibrationStale({ chunks: 100 }, 119)).toBe(false);
    expect(calibrationStale({ chunks: 100 }, 120)).toBe(true);
    expect(calibrationStale({ chunks: 100 }, 80)).toBe(true);
    expect(calibrationStale({ chunks: 0 }, 5)).toBe(true);
  });
});

describe('pseudoQuery', () => {
  it('takes a window of one sentence, reproducibly for a seed', () => {
    const text = 'Short. The laminar boundary layer on a flat plate grows with the Reynolds number along the chord of the wing section.';
    const a = pseudoQuery(text, seededRandom(3));
    expect(a).toBe(pseudoQuery(text, seededRandom(3)));
    expect(a!.split(' ').length).toBeLessThanOrEqual(10);
    expect(text).toContain(a!);
  });

  it('takes at most 20 characters of a Chinese sentence, and null when no sentence is long enough', () => {
    const zh = '尤金袋鼠是一种小型袋鼠，主要分布在澳大利亚南部和西部的沿海地区以及附近岛屿。';
    const q = pseudoQuery(zh, seededRandom(1))!;
    expect(q.length).toBeLessThanOrEqual(20);
    expect(zh).toContain(q);
    expect(pseudoQuery('Too short.', seededRandom(1))).toBeNull();
  });
});

describe('seededRandom', () => {
  it('is deterministic and in [0, 1)', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    for (let i = 0; i < 100; i++) {
      const x = a();
      expect(x).toBe(b());
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
    }
  });
});

describe('tenantOfDocumentId / gateScriptOf', () => {
  it('reads the tenant of an internal document id', () => {
    expect(tenantOfDocumentId('doc-1')).toBe('default');
    expect(tenantOfDocumentId('acme#doc-1')).toBe('acme');
  });

  it('gates CJK questions and Latin-script ones separately', () => {
    expect(gateScriptOf('尤金袋鼠分布在哪里')).toBe('cjk');
    expect(gateScriptOf('where do kangaroos live')).toBe('latin');
  });
});

describe('GATE_PROBES', () => {
  it('has enough distinct probes of each script to calibrate both thresholds', () => {
    expect(new Set(GATE_PROBES).size).toBe(GATE_PROBES.length);
    const cjk = GATE_PROBES.filter((p) => gateScriptOf(p) === 'cjk').length;
    expect(cjk).toBeGreaterThanOrEqual(4 * DEFAULT_CALIBRATION.minProbes);
    expect(GATE_PROBES.length - cjk).toBeGreaterThanOrEqual(4 * DEFAULT_CALIBRATION.minProbes);
  });
});
