import { combinedEvidence } from './calibration';
import { evidenceScore, gateEstimate, gateEvidence, gateSignals, idfCoverage, scoreGap, shouldRefuse } from './evidence';

const boundaryLayer =
  'the boundary layer in simple shear flow past a flat plate . the boundary-layer equations are presented for steady ' +
  'incompressible flow with no pressure gradient . at supersonic speeds the thickness of the laminar boundary layer on a flat ' +
  'plate grows with the mach number .';
const aeroAbstracts = [
  boundaryLayer,
  'experimental investigation of the aerodynamics of a wing in a slipstream . the spanwise distribution of the lift increase due to ' +
    'slipstream was determined at different angles of attack .',
  'means and examples of aeronautical research in france at onera . cosmonautics is currently very much to the forefront in the news .',
  'heat transfer to a hemisphere cylinder at mach 6 in a hypersonic wind tunnel . stagnation point heating rates are compared with theory .',
];

describe('evidenceScore (English)', () => {
  it('is high for an in-corpus question against a matching source', () => {
    const q = 'what is the boundary layer thickness on a flat plate in supersonic flow';
    expect(evidenceScore(q, boundaryLayer)).toBeGreaterThan(0.7);
    expect(shouldRefuse(q, aeroAbstracts.map((text) => ({ text, score: 1 })), 0.5)).toEqual({
      refuse: false,
      evidence: evidenceScore(q, boundaryLayer),
    });
  });

  it('is low for off-topic questions against aerodynamics abstracts', () => {
    const top = aeroAbstracts.map((text, i) => ({ text, score: 10 - i }));
    for (const q of ['what is the capital of France', 'how do I bake sourdough bread', 'who wrote hamlet', 'how to reset my password']) {
      const d = shouldRefuse(q, top, 0.5);
      expect(d.refuse, q).toBe(true);
      expect(d.evidence, q).toBeLessThan(0.4);
    }
  });

  it('credits word variants sharing a long prefix with half weight', () => {
    const full = evidenceScore('aeroelasticity flutter', 'aeroelasticity and flutter of wings');
    const partial = evidenceScore('aeroelasticity flutter', 'aeroelastic flutter of wings');
    expect(full).toBeGreaterThan(partial);
    expect(partial).toBeGreaterThan(evidenceScore('aeroelasticity flutter', 'flutter of wings'));
  });

  it('stays within [0, 1] and is 0 without content words', () => {
    expect(evidenceScore('what is it?', boundaryLayer)).toBe(0);
    expect(evidenceScore('boundary layer', boundaryLayer)).toBeLessThanOrEqual(1);
    expect(evidenceScore('boundary layer', '')).toBe(0);
  });
});

describe('evidenceScore (Chinese)', () => {
  const kangaroo = '尤金袋鼠是袋鼠科中细小的成员。尤金袋鼠分布在澳洲南部及西部海岸的岛屿上。尤金袋鼠很细小，约只有8公斤重。';
  const game = '泡泡战士是基于《泡泡堂》开发的游戏，由韩国Nexon开发与发行。若游戏中离，则4分钟内不得进行配对。';

  it('is high when the text covers the question, even with different word segmentation', () => {
    expect(evidenceScore('尤金袋鼠分布在哪些地区？', kangaroo)).toBeGreaterThan(0.6);
    expect(evidenceScore('若游戏中离，则多少分钟内不得进行配对？', game)).toBeGreaterThan(0.6);
  });

  it('is low for unrelated questions', () => {
    const top = [kangaroo, game].map((text) => ({ text, score: 1 }));
    for (const q of ['如何烤制酸面包？', '法国的首都是哪里？', '公司的年假政策是什么？']) {
      const d = shouldRefuse(q, top, 0.5);
      expect(d.refuse, q).toBe(true);
      expect(d.evidence, q).toBeLessThan(0.3);
    }
  });

  it('ranks the matching source above an unrelated one', () => {
    const q = '尤金袋鼠的体重大约是多少？';
    expect(evidenceScore(q, kangaroo)).toBeGreaterThan(evidenceScore(q, game) + 0.3);
  });
});

describe('shouldRefuse', () => {
  it('refuses without sources and uses the best source', () => {
    expect(shouldRefuse('boundary layer', [], 0.5)).toEqual({ refuse: true, evidence: 0 });
    const d = shouldRefuse('flat plate boundary layer', [{ text: 'nothing relevant', score: 9 }, { text: boundaryLayer, score: 1 }], 0.5);
    expect(d.refuse).toBe(false);
    expect(d.evidence).toBeCloseTo(evidenceScore('flat plate boundary layer', boundaryLayer), 12);
  });

  it('compares with the threshold (refuse when evidence < threshold)', () => {
    const e = evidenceScore('flat plate boundary layer', boundaryLayer);
    expect(shouldRefuse('flat plate boundary layer', [{ text: boundaryLayer, score: 1 }], e).refuse).toBe(false);
    expect(shouldRefuse('flat plate boundary layer', [{ text: boundaryLayer, score: 1 }], e + 1e-9).refuse).toBe(true);
  });
});

describe('gate signals with per-index term weights (issue 15)', () => {
  // Weights as calibration.ts would derive them from an aerodynamics index: its own words are common (low idf),
  // words it never saw are weighed as unseen (high idf).
  const weights = (q: string, known: Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const t of q.toLowerCase().match(/[a-z]+/g) ?? []) out[t] = known[t] ?? 6;
    return out;
  };
  const known = { boundary: 1, layer: 1, flat: 2, plate: 2, supersonic: 2.5, thickness: 2.5, mach: 2, number: 0.5, wing: 1, lift: 2, slipstream: 4 };
  const top = aeroAbstracts.map((text, i) => ({ text, score: 4 - i }));

  it('idf coverage counts a token when any of the top sources has it (a long question answered by several sources)', () => {
    const q = 'boundary layer thickness on a flat plate and lift increase of a wing in a slipstream';
    const w = weights(q, known);
    const union = idfCoverage(q, aeroAbstracts, w, 6);
    const single = Math.max(...aeroAbstracts.map((t) => idfCoverage(q, [t], w, 6)));
    expect(union).toBeGreaterThan(single);
    expect(union).toBeGreaterThan(0.7);
  });

  it('an unmatched word the index never saw weighs most: an off-topic question sharing common words scores low', () => {
    const q = 'what is the boundary of the schengen area';
    const w = weights(q, known);
    expect(idfCoverage(q, aeroAbstracts, w, 6)).toBeLessThan(0.3);
    // the same question under idf-free length weights fares better, which is the fixed gate's weakness
    const lengthOnly = Object.fromEntries(Object.keys(w).map((t) => [t, Math.max(1, Math.min(8, t.length - 2))]));
    expect(idfCoverage(q, aeroAbstracts, lengthOnly, 6)).toBeGreaterThan(idfCoverage(q, aeroAbstracts, w, 6));
  });

  it('an unmatched common word costs little', () => {
    const q = 'supersonic boundary layer thickness number';
    const withCommonMiss = idfCoverage(q, [boundaryLayer.replace('number', 'value')], weights(q, known), 6);
    expect(withCommonMiss).toBeGreaterThan(0.75);
  });

  it('scoreGap is the relative drop from the top score to the last one', () => {
    expect(scoreGap([1, 0.5, 0.25])).toBeCloseTo(0.75);
    expect(scoreGap([0.2, 0.2])).toBe(0);
    expect(scoreGap([1])).toBe(0);
    expect(scoreGap([0, 0])).toBe(0);
  });

  it('gateSignals: idf coverage only with weights and for Latin-script questions; the estimate is it, else coverage', () => {
    const q = 'boundary layer on a flat plate';
    const plain = gateSignals(q, top);
    expect(plain.idf_coverage).toBeUndefined();
    expect(plain.coverage).toBeCloseTo(Math.max(...aeroAbstracts.map((t) => evidenceScore(q, t))));
    expect(gateEvidence(plain)).toBe(plain.coverage);
    const withW = gateSignals(q, top, { termWeights: weights(q, known) });
    expect(withW.idf_coverage).toBeGreaterThan(0.5);
    expect(gateEvidence(withW)).toBe(withW.idf_coverage);
    const zh = gateSignals('尤金袋鼠分布在哪些地区', [{ text: '尤金袋鼠分布在澳大利亚南部地区。', score: 1 }], { termWeights: { 尤金袋鼠: 5 } });
    expect(zh.idf_coverage).toBeUndefined();
    expect(gateEvidence(zh)).toBe(zh.coverage);
  });

  it('shouldRefuse with weights decides on the estimate and reports the signals; without, it is the idf-free gate', () => {
    const inDomain = 'supersonic boundary layer thickness on a flat plate';
    const d = shouldRefuse(inDomain, top, 0.5, { termWeights: weights(inDomain, known) });
    expect(d.refuse).toBe(false);
    expect(d.signals?.idf_coverage).toBe(d.evidence);
    const off = 'what is the boundary of the schengen area';
    expect(shouldRefuse(off, top, 0.5, { termWeights: weights(off, known) }).refuse).toBe(true);
    expect(shouldRefuse(inDomain, top, 0.5)).toEqual({ refuse: false, evidence: Math.max(...aeroAbstracts.map((t) => evidenceScore(inDomain, t))) });
    expect(shouldRefuse(inDomain, [], 0.5, { termWeights: weights(inDomain, known) }).refuse).toBe(true);
  });
});

describe('gateEstimate', () => {
  it('is the lexical estimate without a calibration, and combinedEvidence of it and the dense similarity with one', () => {
    const top = [{ text: boundaryLayer, score: 1 }];
    const q = 'boundary layer on a flat plate';
    const cal = { lexical: { q50: 0.1, q95: 0.4 }, dense: { q50: 0.5, q95: 0.6 }, target: 1.3 };
    const signals = gateSignals(q, top, { termWeights: { boundary: 1, layer: 1, flat: 2, plate: 2 }, denseTop: 0.8 });
    expect(gateEstimate(signals)).toBe(gateEvidence(signals));
    expect(gateEstimate(signals, cal)).toBeCloseTo(combinedEvidence({ lexical: gateEvidence(signals), dense: 0.8 }, cal));
    const d = shouldRefuse(q, top, 0.5, { termWeights: { boundary: 1, layer: 1, flat: 2, plate: 2 }, calibration: cal, denseTop: 0.8 });
    expect(d.evidence).toBeCloseTo(gateEstimate(signals, cal));
    expect(d.refuse).toBe(d.evidence < 0.5);
  });
});
