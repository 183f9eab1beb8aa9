import {
  calibratedThreshold,
  calibrationStale,
  DEFAULT_CALIBRATION,
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

describe('calibratedThreshold', () => {
  const probes = Array.from({ length: 40 }, (_, i) => i / 100); // 0.00 … 0.39

  it('sits at the probes’ 95th percentile plus the margin', () => {
    // nearest rank: ceil(0.95 × 40) = 38th value = 0.37; + 0.03
    expect(calibratedThreshold(probes, [], 0.45)).toBeCloseTo(0.4, 3);
  });

  it('is clamped to [floor, ceiling]', () => {
    expect(calibratedThreshold(probes.map(() => 0), [], 0.45)).toBe(DEFAULT_CALIBRATION.floor);
    expect(calibratedThreshold(probes.map(() => 0.9), [], 0.45)).toBe(DEFAULT_CALIBRATION.ceiling);
  });

  it('never exceeds what most pseudo-queries from the index reach', () => {
    const highProbes = probes.map((p) => p + 0.2); // q95 + margin = 0.6
    const pseudo = Array.from({ length: 20 }, (_, i) => 0.45 + i / 100); // q10 = 0.46
    expect(calibratedThreshold(highProbes, pseudo, 0.45)).toBeCloseTo(0.46, 3);
    expect(calibratedThreshold(highProbes, pseudo.slice(0, 5), 0.45)).toBe(0.6); // too few pseudo-queries: no cap
  });

  it('falls back when there are too few probes of a script', () => {
    expect(calibratedThreshold([0.1, 0.2], [], 0.45)).toBe(0.45);
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
