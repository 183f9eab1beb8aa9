import { describe, expect, it } from 'vitest';
import { chunkVectorLength, chunkVectorValues, EmbeddedChunksEventSchema } from './value';
import { decodeBytesPortable, decodeVectorF32, encodeBytesPortable, encodeVectorF32, isF32Base64 } from './vector-encoding';

/* The compact vector form of rag.chunks.embedded.v1: exact float32 round trips, the same bytes as Node's base64. */

function randomVector(n: number): Float32Array {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (Math.random() - 0.5) * 10 ** Math.floor(Math.random() * 8 - 4);
  return v;
}

describe('float32 base64 vectors', () => {
  it('round-trips every value exactly and writes what Buffer writes (standard base64, little-endian float32)', () => {
    for (const n of [0, 1, 2, 3, 7, 384, 1024, 4097]) {
      const v = randomVector(n);
      if (n > 3) v.set([0, -0, Number.MIN_VALUE, 3.4028234663852886e38], 0);
      const b64 = encodeVectorF32(v);
      expect(b64).toBe(Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64'));
      expect(isF32Base64(b64)).toBe(true);
      const back = decodeVectorF32(b64);
      expect(back.length).toBe(n);
      expect(Object.is(back[1], v[1])).toBe(true);
      expect(Array.from(back)).toEqual(Array.from(v));
      // A plain number array (already float32 values) encodes the same.
      expect(encodeVectorF32(Array.from(v))).toBe(b64);
    }
  });

  it('writes and reads the same strings without Buffer (the portable codec browsers use)', () => {
    for (const n of [0, 1, 2, 3, 5, 384, 9000]) {
      const bytes = new Uint8Array(n).map(() => Math.floor(Math.random() * 256));
      const b64 = Buffer.from(bytes).toString('base64');
      expect(encodeBytesPortable(bytes)).toBe(b64);
      expect(Array.from(decodeBytesPortable(b64, n))).toEqual(Array.from(bytes));
    }
    expect(() => decodeBytesPortable('AA=AAA==', 4)).toThrow(/outside the alphabet/);
  });

  it('encodes a view into a larger buffer by its own bytes only', () => {
    const whole = randomVector(10);
    const view = whole.subarray(3, 7);
    expect(Array.from(decodeVectorF32(encodeVectorF32(view)))).toEqual(Array.from(view));
  });

  it('refuses strings that are not base64 of whole float32 values, with the reason', () => {
    expect(isF32Base64('AAAA')).toBe(false); // 3 bytes
    expect(isF32Base64('AAAAAA==')).toBe(true); // 4 bytes
    expect(isF32Base64('AAAAAA=')).toBe(false);
    expect(isF32Base64('AAA*AA==')).toBe(false);
    expect(() => decodeVectorF32('AAAA')).toThrow(/not a base64 float32 vector/);
    expect(() => decodeVectorF32('AA=AAA==')).toThrow(/outside the alphabet/);
  });
});

describe('EmbeddedChunksEventSchema vectors', () => {
  const chunk = { chunk_id: 'd#v1#1', document_id: 'd', tenant: 't', version: 1, ordinal: 1, kind: 'child', parent_id: null, text: 'x', token_count: 1, acl: ['*'], metadata: {}, title: '', heading_path: [] };
  const event = (vectors: unknown[], dim = 3) => ({
    event_id: 'e',
    op: 'upsert',
    document: { document_id: 'd', tenant: 't', version: 1, content_hash: 'h', title: '', chunks: [chunk], model: 'm', dim, vectors },
  });
  const f32 = encodeVectorF32(Float32Array.from([0.5, -1, 2]));

  it('accepts either form and reads the same values from both', () => {
    const a = EmbeddedChunksEventSchema.parse(event([{ chunk_id: 'd#v1#1', vector_f32: f32 }]));
    const b = EmbeddedChunksEventSchema.parse(event([{ chunk_id: 'd#v1#1', vector: [0.5, -1, 2] }]));
    if (a.op !== 'upsert' || b.op !== 'upsert') throw new Error('not upserts');
    expect(Array.from(chunkVectorValues(a.document.vectors[0]!))).toEqual([0.5, -1, 2]);
    expect(Array.from(chunkVectorValues(b.document.vectors[0]!))).toEqual([0.5, -1, 2]);
    expect(chunkVectorLength(a.document.vectors[0]!)).toBe(3);
  });

  it('refuses both forms at once, neither, a malformed string and a length other than dim', () => {
    const problems = (vectors: unknown[], dim?: number) => {
      const r = EmbeddedChunksEventSchema.safeParse(event(vectors, dim));
      return r.success ? [] : r.error.issues.map((i) => i.message);
    };
    expect(problems([{ chunk_id: 'd#v1#1', vector_f32: f32, vector: [0.5, -1, 2] }]).join()).toMatch(/exactly one of/);
    expect(problems([{ chunk_id: 'd#v1#1' }]).join()).toMatch(/exactly one of/);
    expect(problems([{ chunk_id: 'd#v1#1', vector_f32: 'not base64!' }]).join()).toMatch(/base64 of little-endian float32/);
    expect(problems([{ chunk_id: 'd#v1#1', vector_f32: f32 }], 4).join()).toMatch(/`dim` values/);
    expect(problems([{ chunk_id: 'd#v1#1', vector_f32: f32 }])).toEqual([]);
  });
});
