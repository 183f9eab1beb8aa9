import { describe, expect, it } from 'vitest';
import { decodeListCursor, encodeListCursor } from './list-cursor';

describe('document list cursors', () => {
  it('round-trips a position exactly (millisecond instants, large sequence numbers)', () => {
    for (const p of [
      { updated_at: '2026-12-02T19:25:05.123Z', seq: 1 },
      { updated_at: '1970-01-01T00:00:00.000Z', seq: 0 },
      { updated_at: '2099-12-31T23:59:59.999Z', seq: Number.MAX_SAFE_INTEGER },
    ]) {
      const token = encodeListCursor(p);
      expect(token).toMatch(/^[0-9a-z]+\.[0-9a-z]+$/);
      expect(decodeListCursor(token!)).toEqual(p);
    }
  });

  it('orders nothing by itself but keeps later positions distinct', () => {
    const a = encodeListCursor({ updated_at: '2026-12-02T19:25:05.123Z', seq: 7 });
    const b = encodeListCursor({ updated_at: '2026-12-02T19:25:05.123Z', seq: 8 });
    expect(a).not.toBe(b);
  });

  it('has no token for a record without a sequence number or with an unreadable instant', () => {
    expect(encodeListCursor({ updated_at: '2026-12-02T19:25:05.123Z' })).toBeNull();
    expect(encodeListCursor({ updated_at: 'yesterday', seq: 3 })).toBeNull();
    expect(encodeListCursor({ updated_at: '2026-12-02T19:25:05.123Z', seq: -1 })).toBeNull();
  });

  it('rejects what it did not make', () => {
    for (const bad of ['', '.', 'abc', 'abc.', '.abc', 'ABC.def', 'a.b.c', 'zzzzzzzzzzzz.1', '1.zzzzzzzzzzzz', 'a b.c', '12.-3', '😀.1']) {
      expect(decodeListCursor(bad)).toBeNull();
    }
  });
});
