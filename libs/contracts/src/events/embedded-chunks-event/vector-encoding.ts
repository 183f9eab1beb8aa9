/**
 * The compact wire form of an embedding on `rag.chunks.embedded.v1`: the float32 values, little-endian IEEE-754,
 * base64 (RFC 4648, with padding). 384 values are 2,048 characters against ≈ 7,500 as JSON numbers (a float32 widened
 * to a double prints 17–20 characters), and neither side parses or validates numbers one by one: on the embedded bus
 * the vectors were ≈ 80 % of a message's bytes and JSON.stringify/parse plus zod's per-number checks of them ≈ 20 % of
 * the main thread's ingestion time (issue 13). Float32 loses nothing: every embedder computes float32 values.
 *
 * Node's Buffer does the base64 where it exists (≈ 11 µs to encode and 4 µs to decode a 384-value vector, against 80
 * and 44 µs for the JSON it replaces); the contracts stay free of Node imports (the console and the domain share them),
 * so elsewhere a table-driven codec (≈ 2× Buffer's time) gives the same strings.
 */

interface NodeBufferLike {
  from(bytes: ArrayBufferLike, offset: number, length: number): { toString(encoding: 'base64'): string };
  from(text: string, encoding: 'base64'): Uint8Array;
}
const NodeBuffer = (globalThis as { Buffer?: NodeBufferLike }).Buffer;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const CODES = new Uint8Array(128).fill(255);
for (let i = 0; i < ALPHABET.length; i++) CODES[ALPHABET.charCodeAt(i)] = i;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * The characters of base64 (a linear scan: the grouped form `(?:[…]{4})*…` backtracked and cost ≈ 50 µs per 2 KB
 * vector); with `isF32Base64`'s length check, what the schema accepts. A string that passes and still does not decode
 * (padding in the middle) fails in `decodeVectorF32` with its reason.
 */
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;

/** Whether `s` looks like base64 of a whole number of float32 values (4 bytes each). */
export function isF32Base64(s: string): boolean {
  return s.length % 4 === 0 && BASE64_CHARS.test(s) && Number.isInteger(f32Base64Length(s));
}

function littleEndianBytes(values: Float32Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i]!, true);
  return out;
}

/** The base64 form of `values` (float32, little-endian). */
export function encodeVectorF32(values: Float32Array | readonly number[]): string {
  const bytes = littleEndianBytes(values instanceof Float32Array ? values : Float32Array.from(values));
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  return encodeBytesPortable(bytes);
}

/** Base64 of `bytes` without Buffer (browsers); exported for the spec that holds it to Buffer's output. */
export function encodeBytesPortable(bytes: Uint8Array): string {
  const codes = new Array<number>(Math.ceil(bytes.length / 3) * 4);
  let o = 0;
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    codes[o++] = ALPHABET.charCodeAt(n >>> 18);
    codes[o++] = ALPHABET.charCodeAt((n >>> 12) & 63);
    codes[o++] = ALPHABET.charCodeAt((n >>> 6) & 63);
    codes[o++] = ALPHABET.charCodeAt(n & 63);
  }
  const rest = bytes.length - i;
  if (rest > 0) {
    const n = (bytes[i]! << 16) | (rest === 2 ? bytes[i + 1]! << 8 : 0);
    codes[o++] = ALPHABET.charCodeAt(n >>> 18);
    codes[o++] = ALPHABET.charCodeAt((n >>> 12) & 63);
    codes[o++] = rest === 2 ? ALPHABET.charCodeAt((n >>> 6) & 63) : 61; // '='
    codes[o++] = 61;
  }
  // In slices: String.fromCharCode takes its codes as arguments, and engines cap how many a call may pass.
  let s = '';
  for (let k = 0; k < codes.length; k += 8192) s += String.fromCharCode.apply(null, codes.slice(k, k + 8192));
  return s;
}

/** How many float32 values a canonical base64 string holds (its decoded bytes ÷ 4), without decoding it. */
export function f32Base64Length(b64: string): number {
  const pad = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return ((b64.length / 4) * 3 - pad) / 4;
}

/** The values of a base64 float32 vector; throws on a string that is not canonical base64 of whole float32s. */
export function decodeVectorF32(b64: string): Float32Array {
  const n = f32Base64Length(b64);
  if (b64.length % 4 !== 0 || !Number.isInteger(n)) throw new Error(`not a base64 float32 vector (${b64.length} characters)`);
  let bytes: Uint8Array;
  if (NodeBuffer) {
    // Buffer skips characters outside the alphabet and stops at padding instead of failing: either leaves fewer bytes.
    const decoded = NodeBuffer.from(b64, 'base64');
    if (decoded.length !== n * 4) throw new Error(`not a base64 float32 vector: a character outside the alphabet, or padding before the end`);
    // A copy into an aligned buffer of its own (Buffer's pool slices may start at any byte; Float32Array needs 4).
    bytes = new Uint8Array(decoded);
  } else {
    bytes = decodeBytesPortable(b64, n * 4);
  }
  if (LITTLE_ENDIAN) return new Float32Array(bytes.buffer, bytes.byteOffset, n);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/** The `length` bytes of a base64 string without Buffer (browsers); exported for the spec. */
export function decodeBytesPortable(b64: string, length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let o = 0;
  for (let i = 0; i < b64.length; i += 4) {
    const a = CODES[b64.charCodeAt(i)] ?? 255;
    const b = CODES[b64.charCodeAt(i + 1)] ?? 255;
    // '=' only pads the last group ("xx==" or "xxx="); anywhere else it is not base64.
    const last = i + 4 === b64.length;
    const padC = last && b64.charCodeAt(i + 2) === 61 && b64.charCodeAt(i + 3) === 61;
    const c = padC ? 0 : (CODES[b64.charCodeAt(i + 2)] ?? 255);
    const d = last && b64.charCodeAt(i + 3) === 61 ? 0 : (CODES[b64.charCodeAt(i + 3)] ?? 255);
    if ((a | b | c | d) > 63) throw new Error(`not a base64 float32 vector: a character outside the alphabet near position ${i}`);
    const v = (a << 18) | (b << 12) | (c << 6) | d;
    if (o < bytes.length) bytes[o++] = v >>> 16;
    if (o < bytes.length) bytes[o++] = (v >>> 8) & 255;
    if (o < bytes.length) bytes[o++] = v & 255;
  }
  return bytes;
}
