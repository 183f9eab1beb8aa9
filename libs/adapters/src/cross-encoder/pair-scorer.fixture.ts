/**
 * For specs only. No package registry reachable here ships a cross-encoder (see the fetch script), so
 * the cross-encoder code path is exercised on a stand-in built from a real, fetched model:
 * all-MiniLM-L6-v2 with a scoring head appended to its ONNX graph. The head reads the encoder's
 * `last_hidden_state` for the (query, passage) pair, mean-pools the query tokens (token_type 0) and
 * the passage tokens (token_type 1) separately, and outputs `logits` = 10 · (cosine − 0.5) with shape
 * [batch, 1] — the same inputs, outputs and config (`BertForSequenceClassification`, one label) as a
 * real ms-marco cross-encoder, so transformers.js loads it with AutoModelForSequenceClassification.
 * It ranks by topical overlap; it is not a trained relevance model.
 *
 * The head is added without an ONNX library: protobuf merges a repeated field's entries when a message
 * is concatenated with another serialised message of the same type, so appending a ModelProto that
 * holds only `graph { node…, initializer…, output: logits }` to the original bytes extends its graph.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const PAIR_SCORER_NAME = 'test-pair-scorer-minilm';
const FIXTURE_VERSION = 1;

// ---- minimal protobuf writer -------------------------------------------------------------------

function varint(n: number): number[] {
  if (n < 0 || !Number.isSafeInteger(n)) throw new Error(`varint out of range: ${n}`);
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}
const key = (field: number, wire: number) => varint(field * 8 + wire);
const bytesField = (field: number, bytes: Uint8Array | number[]) => [...key(field, 2), ...varint(bytes.length), ...bytes];
const stringField = (field: number, s: string) => bytesField(field, [...Buffer.from(s, 'utf8')]);
const intField = (field: number, n: number) => [...key(field, 0), ...varint(n)];

// onnx.proto field numbers
const ATTR_INT = 2;
const ATTR_INTS = 7;
const FLOAT = 1;

type Attr = { name: string; i?: number; ints?: number[] };

function attribute(a: Attr): number[] {
  const parts = [...stringField(1, a.name)];
  if (a.i !== undefined) parts.push(...intField(3, a.i), ...intField(20, ATTR_INT));
  if (a.ints) {
    for (const v of a.ints) parts.push(...intField(8, v));
    parts.push(...intField(20, ATTR_INTS));
  }
  return parts;
}

function node(op: string, inputs: string[], output: string, attrs: Attr[] = []): number[] {
  const parts: number[] = [];
  for (const i of inputs) parts.push(...stringField(1, i));
  parts.push(...stringField(2, output), ...stringField(3, `rag_pair_${output}`), ...stringField(4, op));
  for (const a of attrs) parts.push(...bytesField(5, attribute(a)));
  return bytesField(1, parts); // GraphProto.node
}

function scalar(name: string, value: number): number[] {
  const raw = Buffer.alloc(4);
  raw.writeFloatLE(value);
  return bytesField(5, [...intField(2, FLOAT), ...stringField(8, name), ...bytesField(9, [...raw])]); // GraphProto.initializer
}

function logitsOutput(name: string): number[] {
  const dim = (d: number[]) => bytesField(1, d);
  const shape = [...dim(stringField(2, 'batch_size')), ...dim(intField(1, 1))];
  const tensorType = [...intField(1, FLOAT), ...bytesField(2, shape)];
  const typeProto = bytesField(1, tensorType);
  return bytesField(12, [...stringField(1, name), ...bytesField(2, typeProto)]); // GraphProto.output
}

/** The serialised ModelProto fragment that adds the pair-scoring head. */
export function pairScorerHead(): Buffer {
  const p = (s: string) => `rag_pair_${s}`;
  const graph = [
    ...node('Cast', ['attention_mask'], p('mask'), [{ name: 'to', i: FLOAT }]),
    ...node('Cast', ['token_type_ids'], p('tt'), [{ name: 'to', i: FLOAT }]),
    ...node('Mul', [p('mask'), p('tt')], p('pmask')),
    ...node('Sub', [p('mask'), p('pmask')], p('qmask')),
    ...node('Unsqueeze', [p('qmask')], p('qmask3'), [{ name: 'axes', ints: [2] }]),
    ...node('Unsqueeze', [p('pmask')], p('pmask3'), [{ name: 'axes', ints: [2] }]),
    ...node('Mul', ['last_hidden_state', p('qmask3')], p('hq')),
    ...node('Mul', ['last_hidden_state', p('pmask3')], p('hp')),
    ...node('ReduceSum', [p('hq')], p('q'), [{ name: 'axes', ints: [1] }, { name: 'keepdims', i: 0 }]),
    ...node('ReduceSum', [p('hp')], p('d'), [{ name: 'axes', ints: [1] }, { name: 'keepdims', i: 0 }]),
    ...node('Mul', [p('q'), p('d')], p('qd')),
    ...node('ReduceSum', [p('qd')], p('dot'), [{ name: 'axes', ints: [1] }, { name: 'keepdims', i: 1 }]),
    ...node('Mul', [p('q'), p('q')], p('qq')),
    ...node('ReduceSum', [p('qq')], p('nq2'), [{ name: 'axes', ints: [1] }, { name: 'keepdims', i: 1 }]),
    ...node('Mul', [p('d'), p('d')], p('dd')),
    ...node('ReduceSum', [p('dd')], p('nd2'), [{ name: 'axes', ints: [1] }, { name: 'keepdims', i: 1 }]),
    ...node('Mul', [p('nq2'), p('nd2')], p('n2')),
    ...node('Sqrt', [p('n2')], p('n')),
    ...node('Add', [p('n'), p('eps')], p('den')),
    ...node('Div', [p('dot'), p('den')], p('cos')),
    ...node('Sub', [p('cos'), p('offset')], p('centered')),
    ...node('Mul', [p('centered'), p('scale')], 'logits'),
    ...scalar(p('eps'), 1e-6),
    ...scalar(p('offset'), 0.5),
    ...scalar(p('scale'), 10),
    ...logitsOutput('logits'),
  ];
  return Buffer.from(bytesField(7, graph)); // ModelProto.graph
}

// ---- fixture folder ----------------------------------------------------------------------------

/**
 * Builds `<modelsDir>/test-pair-scorer-minilm/` from `<modelsDir>/all-minilm-l6-v2/` (fetched by the
 * fetch script) unless it is already there. Returns the folder name.
 */
export function buildPairScorer(modelsDir: string): string {
  const target = join(modelsDir, PAIR_SCORER_NAME);
  const marker = join(target, 'fixture.json');
  if (existsSync(marker)) {
    const m = JSON.parse(readFileSync(marker, 'utf8')) as { version?: number };
    if (m.version === FIXTURE_VERSION) return PAIR_SCORER_NAME;
  }
  const source = join(modelsDir, 'all-minilm-l6-v2');
  if (!existsSync(join(source, 'onnx', 'model.onnx'))) throw new Error(`${source} is missing: fetch all-minilm-l6-v2 first`);
  const stage = `${target}.tmp-${process.pid}`;
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(join(stage, 'onnx'), { recursive: true });
  writeFileSync(join(stage, 'onnx', 'model.onnx'), Buffer.concat([readFileSync(join(source, 'onnx', 'model.onnx')), pairScorerHead()]));
  copyFileSync(join(source, 'tokenizer.json'), join(stage, 'tokenizer.json'));
  copyFileSync(join(source, 'tokenizer_config.json'), join(stage, 'tokenizer_config.json'));
  const config = JSON.parse(readFileSync(join(source, 'config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(
    join(stage, 'config.json'),
    JSON.stringify({ ...config, architectures: ['BertForSequenceClassification'], id2label: { 0: 'LABEL_0' }, label2id: { LABEL_0: 0 } }, null, 2),
  );
  writeFileSync(
    join(stage, 'rag-model.json'),
    JSON.stringify({ name: PAIR_SCORER_NAME, kind: 'cross-encoder', maxLength: 256, dtype: 'fp32', upstream: 'test fixture over sentence-transformers/all-MiniLM-L6-v2' }, null, 2),
  );
  writeFileSync(join(stage, 'fixture.json'), JSON.stringify({ version: FIXTURE_VERSION }));
  rmSync(target, { recursive: true, force: true });
  try {
    renameSync(stage, target);
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    if (!existsSync(marker)) throw e; // another worker built it at the same moment
  }
  return PAIR_SCORER_NAME;
}
