import { answerContainsGold, evaluateRun, hitAt, mrrAt, ndcgAt, normalizeAnswerText, parseQrels, recallAt } from './metrics';

describe('parseQrels', () => {
  it('parses the BEIR layout with a header line', () => {
    const q = parseQrels('query-id\tcorpus-id\tscore\n1\t184\t3\n1\t29\t2\n2\td7\t0\n\n');
    expect([...q.keys()]).toEqual(['1', '2']);
    expect(q.get('1')).toEqual(new Map([['184', 3], ['29', 2]]));
    expect(q.get('2')?.get('d7')).toBe(0);
  });

  it('accepts CRLF, spaces, no header and the TREC 4-column layout', () => {
    expect(parseQrels('q1 d1 1\r\nq1 d2 2\r\n').get('q1')).toEqual(new Map([['d1', 1], ['d2', 2]]));
    expect(parseQrels('q1 0 d1 4\n').get('q1')).toEqual(new Map([['d1', 4]]));
  });

  it('throws on a malformed line with its number', () => {
    expect(() => parseQrels('query-id\tcorpus-id\tscore\nq1\td1\tx\n')).toThrow(/line 2/);
    expect(() => parseQrels('q1 d1\n')).toThrow(/line 1/);
  });
});

describe('ranking metrics', () => {
  // Grades: a=3, b=2, c=1 (relevant), z=0 (judged not relevant).
  const qrels = new Map([
    ['a', 3],
    ['b', 2],
    ['c', 1],
    ['z', 0],
  ]);

  it('nDCG@k with graded gains and log2 discount', () => {
    // ranking [b, x, a]: DCG = 2/log2(2) + 0 + 3/log2(4) = 2 + 1.5 = 3.5
    // ideal [a, b, c]: 3 + 2/log2(3) + 1/2 = 3.5 + 1.2618595 = 4.7618595
    expect(ndcgAt(['b', 'x', 'a'], qrels, 3)).toBeCloseTo(3.5 / (3.5 + 2 / Math.log2(3)), 10);
    expect(ndcgAt(['b', 'x', 'a'], qrels, 3)).toBeCloseTo(0.735006, 5);
    // k = 1: DCG = 2, IDCG = 3
    expect(ndcgAt(['b', 'x', 'a'], qrels, 1)).toBeCloseTo(2 / 3, 10);
    expect(ndcgAt(['a', 'b', 'c'], qrels, 10)).toBe(1);
    expect(ndcgAt(['z', 'x'], qrels, 10)).toBe(0);
    expect(ndcgAt(['a'], new Map([['a', 0]]), 10)).toBe(0);
  });

  it('counts a repeated document once', () => {
    // [a, a, b] is treated as [a, b]: DCG@2 = 3 + 2/log2(3) = IDCG@2
    expect(ndcgAt(['a', 'a', 'b'], qrels, 2)).toBeCloseTo(1, 10);
    expect(recallAt(['a', 'a', 'a'], qrels, 3)).toBeCloseTo(1 / 3, 10);
  });

  it('recall, MRR and hit', () => {
    expect(recallAt(['x', 'a', 'y', 'c'], qrels, 2)).toBeCloseTo(1 / 3, 10);
    expect(recallAt(['x', 'a', 'y', 'c'], qrels, 4)).toBeCloseTo(2 / 3, 10);
    expect(recallAt(['a'], new Map(), 10)).toBe(0);
    expect(mrrAt(['x', 'z', 'c'], qrels, 10)).toBeCloseTo(1 / 3, 10);
    expect(mrrAt(['x', 'z', 'c'], qrels, 2)).toBe(0);
    expect(hitAt(['x', 'y', 'z', 'q', 'p', 'a'], qrels, 5)).toBe(0);
    expect(hitAt(['x', 'y', 'z', 'q', 'a'], qrels, 5)).toBe(1);
  });
});

describe('evaluateRun', () => {
  it('averages over judged queries; a missing run counts as zero; unjudged runs are ignored', () => {
    const qrels = parseQrels('query-id\tcorpus-id\tscore\nq1\ta\t1\nq2\tb\t2\nq2\tc\t1\nq3\td\t1\nq4\te\t0\n');
    const run = new Map<string, string[]>([
      ['q1', ['a']], // all metrics 1
      ['q2', ['x', 'c']], // ndcg@10 = (1/log2 3) / (2 + 1/log2 3); recall 1/2; mrr 1/2; hit 1
      // q3 missing → 0; q4 has no relevant judgment → not counted
      ['q9', ['a']],
    ]);
    const m = evaluateRun(run, qrels);
    const q2ndcg = 1 / Math.log2(3) / (2 + 1 / Math.log2(3));
    expect(m.queries).toBe(3);
    expect(m.ndcg_at_10).toBeCloseTo((1 + q2ndcg + 0) / 3, 10);
    expect(m.recall_at_10).toBeCloseTo((1 + 0.5 + 0) / 3, 10);
    expect(m.recall_at_100).toBeCloseTo(0.5, 10);
    expect(m.mrr_at_10).toBeCloseTo(0.5, 10);
    expect(m.hit_at_5).toBeCloseTo(2 / 3, 10);
  });

  it('can be restricted to a set of query ids, and returns zeros when nothing is judged', () => {
    const qrels = parseQrels('q1 a 1\nq2 b 1\n');
    const m = evaluateRun(new Map([['q1', ['a']]]), qrels, { queryIds: ['q1'] });
    expect(m).toEqual({ ndcg_at_10: 1, recall_at_10: 1, recall_at_100: 1, mrr_at_10: 1, hit_at_5: 1, queries: 1 });
    expect(evaluateRun(new Map(), new Map())).toEqual({ ndcg_at_10: 0, recall_at_10: 0, recall_at_100: 0, mrr_at_10: 0, hit_at_5: 0, queries: 0 });
  });
});

describe('answerContainsGold', () => {
  it('is insensitive to NFKC width, case, whitespace and punctuation', () => {
    expect(normalizeAnswerText('Ｈello,  World！')).toBe('helloworld');
    expect(answerContainsGold('若游戏中离，则 4 分钟内不得进行配对。[1]', ['4分钟'])).toBe(true);
    expect(answerContainsGold('可选择经典、热血、狙击等模式进行游戏[2]', ['可选择经典、热血、狙击等模式进行游戏。'])).toBe(true);
    expect(answerContainsGold('The Boundary-Layer thickness grows.', ['boundary layer thickness'])).toBe(true);
    expect(answerContainsGold('ＵＳＡ', ['usa'])).toBe(true);
  });

  it('needs one gold to match and ignores empty golds and citation markers', () => {
    expect(answerContainsGold('the answer is 42', ['41', '42'])).toBe(true);
    expect(answerContainsGold('the answer is 42', ['43'])).toBe(false);
    expect(answerContainsGold('anything', ['', '  ', '。'])).toBe(false);
    expect(answerContainsGold('see the source [1]', ['1'])).toBe(false);
    expect(answerContainsGold('in 1950[1, 2] the tests began', ['1950 the tests'])).toBe(true);
  });
});
