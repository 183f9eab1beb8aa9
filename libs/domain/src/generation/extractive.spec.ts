import { extractiveAnswer } from './extractive';

describe('extractiveAnswer', () => {
  const aero = [
    {
      ref: 1,
      score: 9,
      text:
        'The boundary layer on a flat plate grows with distance from the leading edge. ' +
        'In supersonic flow the boundary layer thickness is larger than in incompressible flow at the same Reynolds number. ' +
        'Wind tunnel tests were run at Mach 2.5, e.g. on cones.',
    },
    { ref: 2, score: 5, text: 'Shock waves form ahead of blunt bodies. Heat transfer rises behind the shock.' },
  ];

  it('picks the sentences that best match the question, whole, each followed by its citation', () => {
    const out = extractiveAnswer('what is the boundary layer thickness on a flat plate in supersonic flow', aero, { maxSentences: 1 });
    expect(out.answer).toBe(
      'In supersonic flow the boundary layer thickness is larger than in incompressible flow at the same Reynolds number [1].',
    );
    expect(out.citedRefs).toEqual([1]);
  });

  it('orders kept sentences by source rank, then position, and cites each', () => {
    const out = extractiveAnswer('boundary layer thickness and heat transfer behind the shock', aero, { maxSentences: 3 });
    const first = out.answer.indexOf('The boundary layer on a flat plate');
    const second = out.answer.indexOf('In supersonic flow');
    const third = out.answer.indexOf('Heat transfer rises behind the shock [2].');
    expect(second).toBeGreaterThan(-1);
    expect(third).toBeGreaterThan(second);
    if (first > -1) expect(first).toBeLessThan(second);
    expect(out.citedRefs).toEqual([1, 2]);
    expect(out.answer).toMatch(/ \[1\]\./);
  });

  it('does not cut decimals or abbreviations out of a sentence', () => {
    const out = extractiveAnswer('at which mach number were the wind tunnel tests on cones run', aero, { maxSentences: 1 });
    expect(out.answer).toBe('Wind tunnel tests were run at Mach 2.5, e.g. on cones [1].');
  });

  it('orders sources by score when they are not given best first', () => {
    const out = extractiveAnswer('shock heat transfer', [...aero].reverse(), { maxSentences: 1 });
    expect(out.citedRefs).toEqual([2]);
  });

  it('skips near-duplicate sentences', () => {
    const dup = [
      { ref: 1, score: 2, text: 'The cruise speed of the aircraft is Mach 0.85.' },
      { ref: 2, score: 1, text: 'The cruise speed of the aircraft is Mach 0.85!' },
    ];
    const out = extractiveAnswer('cruise speed of the aircraft', dup, { maxSentences: 3 });
    expect(out.answer).toBe('The cruise speed of the aircraft is Mach 0.85 [1].');
    expect(out.citedRefs).toEqual([1]);
  });

  it('answers Chinese questions with the full sentence holding the answer span', () => {
    const sources = [
      {
        ref: 1,
        score: 3,
        title: '泡泡战士',
        text:
          '基于《跑跑卡丁车》与《泡泡堂》上所开发的游戏，由韩国Nexon开发与发行。' +
          '玩家以水枪、小枪、锤子或是水炸弹泡封敌人(玩家或NPC)，即为一泡封。' +
          '若游戏中离，则4分钟内不得进行配对。',
      },
    ];
    const a = extractiveAnswer('若游戏中离，则多少分钟内不得进行配对？', sources, { maxSentences: 1 });
    expect(a.answer).toBe('若游戏中离，则4分钟内不得进行配对[1]。');
    const b = extractiveAnswer('玩家用什么泡封敌人？', sources, { maxSentences: 1 });
    expect(b.answer).toContain('玩家以水枪、小枪、锤子或是水炸弹泡封敌人');
  });

  it('lets sentences inherit the subject from the title (or first sentence)', () => {
    const text = '大果西番莲是西番莲属的植物中果实最大的一种。它是分布于热带美洲的一种多年生植物。它的根部可用来当作催吐剂与麻醉药品。';
    for (const title of ['大果西番莲', undefined]) {
      const out = extractiveAnswer('大果西番莲的根部有什么作用？', [{ ref: 1, score: 1, title, text }], { maxSentences: 1 });
      expect(out.answer).toBe('它的根部可用来当作催吐剂与麻醉药品[1]。');
    }
  });

  it('joins Chinese sentences without spaces', () => {
    const out = extractiveAnswer('热带美洲 根部', [{ ref: 1, score: 1, text: '它分布于热带美洲。它的根部可入药。叶子很大。' }], { maxSentences: 2 });
    // 根部 is the rarer word of the two: that sentence leads.
    expect(out.answer).toBe('它的根部可入药[1]。它分布于热带美洲[1]。');
  });

  it('leads with the sentence that answers, then the sentence continuing it, then the others in reading order', () => {
    const text = 'Tests were run in 1950. The tunnel was closed later. Lift on the delta wing rose with incidence up to 20 degrees. It then stalled abruptly.';
    const out = extractiveAnswer('how did lift on the delta wing vary with incidence and when did the wing stall', [{ ref: 1, score: 1, text }], { maxSentences: 3 });
    expect(out.sentences.map((s) => s.text)[0]).toBe('Lift on the delta wing rose with incidence up to 20 degrees.');
    expect(out.answer.startsWith('Lift on the delta wing rose with incidence up to 20 degrees [1].')).toBe(true);
    expect(out.sentences.every((s) => s.ref === 1)).toBe(true);
  });

  it('a lower-ranked source leads only when its sentence is much better than the best source’s', () => {
    const srcs = [
      { ref: 1, score: 2, text: 'Heat transfer was measured on a cone.' },
      { ref: 2, score: 1, text: 'Heat transfer to a cone at Mach 6 doubled with the nose bluntness ratio.' },
    ];
    const out = extractiveAnswer('how does heat transfer to a cone at mach 6 vary with nose bluntness ratio', srcs);
    expect(out.citedRefs[0]).toBe(2);
    expect(out.sentences[0]!.text).toContain('bluntness');
  });

  it('respects maxChars by dropping the weakest sentences, then truncating', () => {
    const full = extractiveAnswer('boundary layer thickness supersonic flat plate', aero, { maxSentences: 3 });
    const limited = extractiveAnswer('boundary layer thickness supersonic flat plate', aero, { maxSentences: 3, maxChars: 130 });
    expect(full.answer.length).toBeGreaterThan(130);
    expect(limited.answer.length).toBeLessThanOrEqual(130);
    expect(limited.answer).toContain('In supersonic flow');
    const cut = extractiveAnswer('boundary layer thickness supersonic flat plate', aero, { maxSentences: 1, maxChars: 40 });
    expect(cut.answer.length).toBeLessThanOrEqual(40);
    expect(cut.answer).toMatch(/…\[1\]$/);
  });

  it('falls back to the first sentence of the best source, and returns nothing without text', () => {
    const out = extractiveAnswer('how do I bake sourdough bread', aero);
    expect(out).toEqual({
      answer: 'The boundary layer on a flat plate grows with distance from the leading edge [1].',
      citedRefs: [1],
      sentences: [{ text: 'The boundary layer on a flat plate grows with distance from the leading edge.', ref: 1 }],
    });
    expect(extractiveAnswer('anything', [])).toEqual({ answer: '', citedRefs: [], sentences: [] });
    expect(extractiveAnswer('anything', [{ ref: 1, score: 1, text: '  \n ' }])).toEqual({ answer: '', citedRefs: [], sentences: [] });
  });
});
