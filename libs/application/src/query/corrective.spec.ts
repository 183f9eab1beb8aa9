import { REFUSAL_MESSAGE } from '@rag/domain';
import { RefusalHold } from './corrective';

describe('RefusalHold (one streamed refusal across the corrective retry)', () => {
  it('holds back the gate refusal, whether it comes in one piece or several', () => {
    for (const pieces of [[REFUSAL_MESSAGE], [REFUSAL_MESSAGE.slice(0, 5), REFUSAL_MESSAGE.slice(5, 20), REFUSAL_MESSAGE.slice(20)]]) {
      const out: string[] = [];
      const hold = new RefusalHold((t) => out.push(t));
      for (const p of pieces) hold.delta(p);
      expect(out).toEqual([]);
      expect(hold.onlyRefusal).toBe(true);
      hold.flush();
      expect(out.join('')).toBe(REFUSAL_MESSAGE);
    }
  });

  it('passes an answer through as soon as it stops looking like the refusal', () => {
    const out: string[] = [];
    const hold = new RefusalHold((t) => out.push(t));
    hold.delta('I ');
    expect(out).toEqual([]);
    hold.delta('think [1]');
    expect(out).toEqual(['I think [1]']);
    hold.delta(' more.');
    expect(out).toEqual(['I think [1]', ' more.']);
    expect(hold.onlyRefusal).toBe(false);
    hold.flush();
    expect(out.join('')).toBe('I think [1] more.');
  });

  it('counts nothing streamed as a refusal that may still be retried', () => {
    const hold = new RefusalHold();
    expect(hold.onlyRefusal).toBe(true);
  });
});
