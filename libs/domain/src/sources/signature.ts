import { createHmac, timingSafeEqual } from 'node:crypto';

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/**
 * Verifies `sha256=<hex>` (Confluence `X-Hub-Signature`, Notion `X-Notion-Signature`): HMAC-SHA256 of the raw body
 * keyed by the shared secret, compared in constant time. The raw bytes are hashed, never a re-serialized body.
 */
export function verifyHmacSha256(secret: string, rawBody: Uint8Array, header: string | undefined): SignatureCheck {
  if (!header) return { ok: false, reason: 'missing signature header' };
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m) return { ok: false, reason: 'signature header is not of the form sha256=<64 hex digits>' };
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  const given = Buffer.from(m[1]!, 'hex');
  // both are 32 bytes here, so timingSafeEqual never throws on length
  return timingSafeEqual(expected, given) ? { ok: true } : { ok: false, reason: 'signature does not match' };
}

/** `sha256=<hex>` for a body (fake servers and tests sign with the same function the gateway verifies with). */
export function signHmacSha256(secret: string, rawBody: Uint8Array | string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/** Constant-time equality of two secrets of any length (compares digests, so lengths leak nothing). */
export function secretsEqual(a: string, b: string): boolean {
  const da = createHmac('sha256', 'cmp').update(a).digest();
  const db = createHmac('sha256', 'cmp').update(b).digest();
  return timingSafeEqual(da, db);
}

/**
 * Replay window: an event whose signed timestamp is further than `toleranceMs` from now (either way) is refused,
 * so a captured request cannot be replayed later; within the window the event id dedupe answers replays.
 */
export function checkTimestamp(eventMs: number, nowMs: number, toleranceMs: number): SignatureCheck {
  if (!Number.isFinite(eventMs)) return { ok: false, reason: 'event timestamp is not a valid time' };
  const skew = Math.abs(nowMs - eventMs);
  if (skew > toleranceMs) {
    return { ok: false, reason: `event timestamp is ${Math.round(skew / 1000)} s away from now; the tolerance is ${Math.round(toleranceMs / 1000)} s` };
  }
  return { ok: true };
}
