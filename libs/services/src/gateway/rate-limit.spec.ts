import { describe, expect, it } from 'vitest';
import { TokenBucketLimiter } from './rate-limit';

describe('TokenBucketLimiter', () => {
  it('allows a burst, then refuses with Retry-After until tokens refill at the rate', () => {
    let now = 0;
    const l = new TokenBucketLimiter({ rps: 2, burst: 3 }, () => now);
    expect([1, 2, 3].map(() => l.take('k')!.allowed)).toEqual([true, true, true]);
    const refused = l.take('k')!;
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.retryAfterS).toBe(1); // one token at 2/s takes 0.5 s → rounded up to whole seconds
    now += 500;
    expect(l.take('k')!.allowed).toBe(true);
    expect(l.take('k')!.allowed).toBe(false);
    now += 10_000; // refill is capped at the burst
    expect([1, 2, 3, 4].map(() => l.take('k')!.allowed)).toEqual([true, true, true, false]);
  });

  it('keeps one bucket per key and honours a key’s own limit over the default', () => {
    const now = 0;
    const l = new TokenBucketLimiter({ rps: 100, burst: 100 }, () => now);
    const own = { rps: 0.1, burst: 1 };
    expect(l.take('slow', own)!.allowed).toBe(true);
    const r = l.take('slow', own)!;
    expect(r.allowed).toBe(false);
    expect(r.retryAfterS).toBe(10);
    expect(r.limit).toEqual(own);
    expect(l.take('other')!.allowed).toBe(true);
  });

  it('is off for a limit of 0 rps and bounds its memory', () => {
    const l0 = new TokenBucketLimiter({ rps: 0, burst: 1 });
    expect(l0.take('k')).toBeNull();
    let now = 0;
    const l = new TokenBucketLimiter({ rps: 1, burst: 1 }, () => now, 10);
    for (let i = 0; i < 50; i++) {
      now += 1;
      l.take(`k${i}`);
    }
    expect(l.size).toBeLessThanOrEqual(10);
  });
});
