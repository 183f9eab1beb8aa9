import type { DocumentInput, QueryAnswer, QueryMode, RetrieveAnswer, SearchMode } from '@rag/contracts';
import type { EmbeddedHandles } from '@rag/services';
import type { UploadedFile } from '@rag/application';
import type { SourceDoc } from './sources';

export interface SubmitOutcome {
  document_id: string;
  ok: boolean;
  error?: string;
  unchanged?: boolean;
}

export interface StatusView {
  document_id: string;
  status: string;
  error?: string | null;
  chunks?: number;
}

/** What the CLI needs from the platform: a running server over HTTP, or an embedded instance in this process. */
export interface PlatformClient {
  readonly where: string;
  submit(docs: SourceDoc[]): Promise<SubmitOutcome[]>;
  statuses(ids: string[]): Promise<StatusView[]>;
  ask(question: string, opts: { mode?: QueryMode; top_k?: number }): Promise<QueryAnswer>;
  retrieve(query: string, opts: { mode?: SearchMode; top_k?: number; rerank?: boolean }): Promise<RetrieveAnswer>;
  close(): Promise<void>;
}

function toInput(d: SourceDoc): DocumentInput {
  return {
    id: d.id,
    ...(d.title ? { title: d.title } : d.filename ? { title: d.filename } : {}),
    ...(d.text !== undefined ? { text: d.text } : { content_base64: d.bytes!.toString('base64') }),
    ...(d.metadata ? { metadata: d.metadata } : {}),
  };
}

export class InProcessClient implements PlatformClient {
  readonly where = 'in-process (embedded)';
  constructor(readonly handles: EmbeddedHandles) {}

  /**
   * The documents in one `submitMany` (as `POST /v1/documents:batch` does): one registry transaction and one relay round
   * for all of them, where one `submit` each made four SQLite transactions per document on the thread that also runs
   * the pipeline (bench ingest: the submission of 1,398 Cranfield abstracts 1.4–1.6 s → see scripts/bench/README.md).
   */
  async submit(docs: SourceDoc[]): Promise<SubmitOutcome[]> {
    const out: SubmitOutcome[] = new Array(docs.length);
    const valid: { index: number; input: DocumentInput; file?: UploadedFile }[] = [];
    docs.forEach((d, index) => {
      const v = this.handles.documents.validate(toInput(d));
      if (!v.ok) {
        out[index] = { document_id: d.id, ok: false, error: v.error.message };
        return;
      }
      const file = d.bytes ? { buffer: d.bytes, originalname: d.filename } : undefined;
      valid.push(file ? { index, input: { ...v.value, content_base64: undefined }, file } : { index, input: v.value });
    });
    const results = valid.length ? await this.handles.documents.submitMany(valid, 'default') : [];
    results.forEach((r, j) => {
      const { index } = valid[j]!;
      out[index] = r.ok ? { document_id: r.value.document_id, ok: true, unchanged: r.value.unchanged } : { document_id: docs[index]!.id, ok: false, error: r.error.message };
    });
    return out;
  }

  async statuses(ids: string[]): Promise<StatusView[]> {
    const out: StatusView[] = [];
    for (const id of ids) {
      const r = await this.handles.registry.get(id);
      if (r) out.push({ document_id: id, status: r.status, error: r.error, chunks: r.chunks });
    }
    return out;
  }

  ask(question: string, opts: { mode?: QueryMode; top_k?: number }): Promise<QueryAnswer> {
    return this.handles.query.answer({ question, ...opts }, { tenant: 'default' });
  }

  async retrieve(query: string, opts: { mode?: SearchMode; top_k?: number; rerank?: boolean }): Promise<RetrieveAnswer> {
    const { chunks: _c, ...rest } = await this.handles.query.retrieve({ question: query, ...opts }, { tenant: 'default' });
    return rest;
  }

  close(): Promise<void> {
    return this.handles.close();
  }
}

export class HttpClient implements PlatformClient {
  constructor(
    private readonly url: string,
    private readonly apiKey?: string,
  ) {}

  get where(): string {
    return `server at ${this.url}`;
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(this.url + path, {
      method,
      headers: { 'content-type': 'application/json', ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const json = (await res.json().catch(() => ({}))) as T & { error?: { message: string } };
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json.error?.message ?? ''}`);
    return json;
  }

  static async reachable(url: string): Promise<boolean> {
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1500) });
      return res.ok;
    } catch {
      return false;
    }
  }

  async submit(docs: SourceDoc[]): Promise<SubmitOutcome[]> {
    const out: SubmitOutcome[] = [];
    for (let i = 0; i < docs.length; i += 100) {
      const batch = docs.slice(i, i + 100);
      const r = await this.call<{ accepted: { index: number; document_id: string; unchanged?: boolean }[]; rejected: { index: number; error: { message: string } }[] }>(
        'POST',
        '/v1/documents:batch',
        { documents: batch.map(toInput) },
      );
      for (const a of r.accepted) out.push({ document_id: a.document_id, ok: true, unchanged: a.unchanged });
      for (const j of r.rejected) out.push({ document_id: batch[j.index]!.id, ok: false, error: j.error.message });
    }
    return out;
  }

  async statuses(ids: string[]): Promise<StatusView[]> {
    const out: StatusView[] = [];
    const queue = [...ids];
    const worker = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          out.push(await this.call<StatusView>('GET', `/v1/documents/${encodeURIComponent(id)}`));
        } catch {
          /* not visible yet */
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    return out;
  }

  ask(question: string, opts: { mode?: QueryMode; top_k?: number }): Promise<QueryAnswer> {
    return this.call('POST', '/v1/query', { question, ...opts });
  }

  retrieve(query: string, opts: { mode?: SearchMode; top_k?: number; rerank?: boolean }): Promise<RetrieveAnswer> {
    return this.call('POST', '/v1/retrieve', { query, ...opts });
  }

  async close(): Promise<void> {}
}
