import { evidenceScore, shouldRefuse } from './evidence';

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
