import { describe, expect, it } from 'vitest';
import { checkTimestamp, secretsEqual, signHmacSha256, verifyHmacSha256 } from './signature';
import { orderChange } from './ordering';
import { normalizeNotionId, notionDocumentId } from './ids';

describe('verifyHmacSha256', () => {
  const body = Buffer.from('{"event":"page_updated","timestamp":1}');
  it('accepts the HMAC of the raw body and refuses anything else', () => {
    expect(verifyHmacSha256('s3cret', body, signHmacSha256('s3cret', body))).toEqual({ ok: true });
    expect(verifyHmacSha256('s3cret', body, signHmacSha256('other', body)).ok).toBe(false);
    expect(verifyHmacSha256('s3cret', Buffer.from(body.toString() + ' '), signHmacSha256('s3cret', body)).ok).toBe(false);
    expect(verifyHmacSha256('s3cret', body, undefined)).toEqual({ ok: false, reason: 'missing signature header' });
    expect(verifyHmacSha256('s3cret', body, 'sha1=abc').ok).toBe(false);
    expect(verifyHmacSha256('s3cret', body, signHmacSha256('s3cret', body).toUpperCase().replace('SHA256', 'sha256'))).toEqual({ ok: true });
  });
  it('compares secrets of different lengths without throwing', () => {
    expect(secretsEqual('a', 'a')).toBe(true);
    expect(secretsEqual('a', 'ab')).toBe(false);
  });
});

describe('checkTimestamp', () => {
  it('refuses events outside the tolerance either way', () => {
    expect(checkTimestamp(1_000_000, 1_000_000 + 299_000, 300_000).ok).toBe(true);
    expect(checkTimestamp(1_000_000, 1_000_000 + 301_000, 300_000).ok).toBe(false);
    expect(checkTimestamp(1_000_000 + 301_000, 1_000_000, 300_000).ok).toBe(false);
    expect(checkTimestamp(Number.NaN, 1, 300_000).ok).toBe(false);
  });
});

describe('orderChange', () => {
  it('admits the first change, newer changes and retries of the latest upsert', () => {
    expect(orderChange(null, { op: 'upsert', changed_at: 5 })).toEqual({ admit: true });
    expect(orderChange({ changed_at: 5, deleted: false }, { op: 'upsert', changed_at: 6 })).toEqual({ admit: true });
    expect(orderChange({ changed_at: 5, deleted: false }, { op: 'upsert', changed_at: 5 })).toEqual({ admit: true });
    expect(orderChange({ changed_at: 5, deleted: true }, { op: 'upsert', changed_at: 6 })).toEqual({ admit: true });
  });
  it('refuses changes older than the latest admitted one', () => {
    expect(orderChange({ changed_at: 5, deleted: true }, { op: 'upsert', changed_at: 4 }).admit).toBe(false);
    expect(orderChange({ changed_at: 5, deleted: false }, { op: 'delete', changed_at: 4 }).admit).toBe(false);
    expect(orderChange({ changed_at: 5, deleted: true }, { op: 'delete', changed_at: 5 }).admit).toBe(true);
  });
  it('a delete does not win a tie: an update at the same time as a tombstone is admitted (the loader fetch decides)', () => {
    expect(orderChange({ changed_at: 5, deleted: true }, { op: 'upsert', changed_at: 5 })).toEqual({ admit: true });
    expect(orderChange({ changed_at: 5, deleted: false }, { op: 'delete', changed_at: 5 })).toEqual({ admit: true });
  });
});

describe('notion ids', () => {
  it('normalizes dashed and undashed ids', () => {
    expect(normalizeNotionId('59833787B1A24AB5A7D8D8B2C2A52D1E')).toBe('59833787-b1a2-4ab5-a7d8-d8b2c2a52d1e');
    expect(notionDocumentId('59833787-b1a2-4ab5-a7d8-d8b2c2a52d1e')).toBe('notion:59833787-b1a2-4ab5-a7d8-d8b2c2a52d1e');
  });
});
