import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, setLogLevel, type AppConfig } from '@rag/platform';
import { startEmbeddedServer } from '@rag/services';

setLogLevel('error');

export interface Server {
  url: string;
  dataDir: string;
  config: AppConfig;
  stop(): Promise<void>;
}

/**
 * Starts the embedded platform on an ephemeral loopback port over a data folder (a new one unless given). The hashing
 * embedder unless `env` says otherwise: these tests are about the API, and it needs no model files.
 */
export async function startServer(dataDir = mkdtempSync(join(tmpdir(), 'rag-e2e-')), env: Record<string, string> = {}): Promise<Server> {
  const config = loadConfig({ RAG_MAX_BODY_BYTES: String(1024 * 1024), RAG_EMBEDDER: 'hashing', ...env, RAG_DATA_DIR: dataDir, RAG_PORT: '0', RAG_HOST: '127.0.0.1' });
  const s = await startEmbeddedServer(config);
  return { url: s.url, dataDir, config, stop: () => s.close() };
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export async function api<T = Record<string, unknown>>(
  server: Server,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const isRaw = typeof body === 'string' || body instanceof FormData || body instanceof Uint8Array;
  const res = await fetch(server.url + path, {
    method,
    headers: isRaw ? headers : { 'content-type': 'application/json', ...headers },
    ...(body !== undefined ? { body: isRaw ? (body as BodyInit) : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** Polls a document until it reaches a terminal status (indexed, failed, deleted). */
export async function waitForStatus(server: Server, id: string, wanted?: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await api(server, 'GET', `/v1/documents/${encodeURIComponent(id)}`);
    const status = r.body.status as string | undefined;
    if (status && (wanted ? status === wanted : ['indexed', 'failed', 'deleted'].includes(status))) return r.body;
    if (Date.now() > deadline) throw new Error(`document ${id} stuck in ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}
