import { parseCitations } from './citations';

describe('parseCitations', () => {
  it('returns distinct refs in order of first appearance', () => {
    expect(parseCitations('Lift rises [2]. Drag too [1]. Again [2].', 5)).toEqual([2, 1]);
  });

  it('handles [1,2], [1][2], spaces, ranges and full-width brackets', () => {
    expect(parseCitations('a [1,2] b [3][4] c [ 5 , 6 ]', 10)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(parseCitations('a [2-4] b [7–8]', 10)).toEqual([2, 3, 4, 7, 8]);
    expect(parseCitations('升力增大［1］，阻力也增大【2】[3，4]。', 5)).toEqual([1, 2, 3, 4]);
    expect(parseCitations('x [1; 3]', 5)).toEqual([1, 3]);
  });

  it('ignores out-of-range refs and non-citations', () => {
    expect(parseCitations('a [0] b [6] c [3] d [2, 9]', 5)).toEqual([3, 2]);
    expect(parseCitations('array[i] [a] [1.5] [see 2] [] [1-1000]', 5)).toEqual([]);
    expect(parseCitations('no citations here', 5)).toEqual([]);
    expect(parseCitations('[1]', 0)).toEqual([]);
  });
});
