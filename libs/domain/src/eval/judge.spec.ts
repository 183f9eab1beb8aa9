import { describe, expect, it } from 'vitest';
import {
  answerRelevancyScore,
  cosine,
  faithfulnessScore,
  meanOf,
  parseGeneratedQuestions,
  parseJsonObject,
  parseStatements,
  parseVerdicts,
  statementsPrompt,
  verdictsPrompt,
} from './judge';

describe('judge: faithfulness (RAGAS)', () => {
  it('is the supported share of the statements', () => {
    expect(faithfulnessScore([1, 1, 0, 1])).toBe(0.75);
    expect(faithfulnessScore([0, 0])).toBe(0);
    expect(faithfulnessScore([1])).toBe(1);
  });

  it('is null for an answer with no statement (nothing to judge, not a perfect score)', () => {
    expect(faithfulnessScore([])).toBeNull();
  });

  it('counts a verdict the judge left out as unsupported and accepts booleans and strings', () => {
    expect(parseVerdicts('{"verdicts":[{"statement":"a","reason":"r","verdict":1},{"statement":"b","verdict":true}]}', 3)).toEqual([1, 1, 0]);
    expect(parseVerdicts({ verdicts: [{ verdict: '1' }, { verdict: '0' }, { verdict: 2 }] }, 3)).toEqual([1, 0, 0]);
    // extra verdicts beyond the statements are dropped
    expect(parseVerdicts({ verdicts: [1, 1, 1] }, 2)).toEqual([1, 1]);
    expect(parseVerdicts('no json here', 2)).toBeNull();
    expect(parseVerdicts('{"verdict": 1}', 1)).toBeNull();
  });

  it('numbers the statements in the verdict prompt and puts the context first', () => {
    const [, user] = verdictsPrompt('Paris is in France.', ['Paris is in France', 'Paris has 2M people']);
    expect(user!.content).toBe('Context:\nParis is in France.\n\nStatements:\n1. Paris is in France\n2. Paris has 2M people');
    expect(statementsPrompt('q?', 'a.')[1]!.content).toBe('Question: q?\nAnswer: a.');
  });
});

describe('judge: answer relevancy (RAGAS)', () => {
  it('is the mean cosine of the question to the generated questions', () => {
    const q = [1, 0];
    expect(answerRelevancyScore(q, [[1, 0], [0, 1]], false)).toBeCloseTo(0.5, 12);
    expect(answerRelevancyScore(q, [[2, 0]], false)).toBeCloseTo(1, 12);
    expect(answerRelevancyScore(q, [[-1, 0]], false)).toBeCloseTo(-1, 12);
  });

  it('is 0 for a noncommittal answer and null with no generated question', () => {
    expect(answerRelevancyScore([1, 0], [[1, 0]], true)).toBe(0);
    expect(answerRelevancyScore([1, 0], [], false)).toBeNull();
  });

  it('parses generated questions and the noncommittal flag', () => {
    expect(parseGeneratedQuestions('```json\n{"questions": ["Where is Paris?", " ", "What country?"], "noncommittal": 0}\n```')).toEqual({
      questions: ['Where is Paris?', 'What country?'],
      noncommittal: false,
    });
    expect(parseGeneratedQuestions({ questions: [], noncommittal: 1 })).toEqual({ questions: [], noncommittal: true });
    expect(parseGeneratedQuestions('{"noncommittal": 1}')).toBeNull();
  });

  it('cosine rejects vectors of different dimensions and is 0 for a zero vector', () => {
    expect(() => cosine([1, 2], [1])).toThrow(/dimensions differ/);
    expect(cosine([0, 0], [1, 1])).toBe(0);
  });
});

describe('judge: parsing model output', () => {
  it('finds the JSON object in chatter, with braces inside strings', () => {
    expect(parseJsonObject('Sure! Here it is: {"statements": ["a {b} c", "d"]} Hope that helps.')).toEqual({ statements: ['a {b} c', 'd'] });
    expect(parseJsonObject('{"a": "say \\"}\\" please"}')).toEqual({ a: 'say "}" please' });
    expect(parseJsonObject('[1,2]')).toBeNull();
    expect(parseJsonObject('{"unterminated": ')).toBeNull();
  });

  it('keeps non-empty string statements only', () => {
    expect(parseStatements('{"statements": ["Paris is in France.", 3, "", "It is big."]}')).toEqual(['Paris is in France.', 'It is big.']);
    expect(parseStatements('{"claims": []}')).toBeNull();
  });

  it('means over the judged answers only', () => {
    expect(meanOf([1, null, 0.5])).toBe(0.75);
    expect(meanOf([null])).toBeNull();
  });
});
