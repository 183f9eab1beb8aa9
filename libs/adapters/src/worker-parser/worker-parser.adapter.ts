import { Piscina } from 'piscina';
import { loadContent, MIME_MARKDOWN, MIME_TEXT, type LoadResult, type ParseLimits } from '@rag/domain';
import type { DocumentParser, ParseOutcome, ParseRequest } from '@rag/ports';
import type { ParseTask } from './parse.worker';
import { isAbort, Slots, workerEntry } from './worker-support';

export interface WorkerParserOptions {
  /** Parses at once (worker threads); more wait for a free one (RAG_PARSE_WORKERS). */
  workers: number;
  /** Time limit of one parse, from when a worker takes it (RAG_PARSE_TIMEOUT_MS). */
  timeoutMs: number;
  /** Old-generation heap of one worker (RAG_PARSE_MAX_MEMORY_MB). */
  maxMemoryMb: number;
  /** Inflated bytes, pages, text (RAG_MAX_INFLATED_BYTES, RAG_MAX_PAGES, RAG_MAX_TEXT_BYTES). */
  limits: ParseLimits;
  /** The worker module (a `.ts` source or built `.js`); default: parse.worker of this folder. Tests pass their own. */
  workerFile?: string;
  /** Idle workers exit after this long (default 30 s); a parse after that starts a fresh one. */
  idleTimeoutMs?: number;
  /**
   * Plain-text and Markdown uploads of at most this many bytes are parsed on the calling thread (default 65,536; 0: every
   * document goes to a worker). See `parse`.
   */
  inlineMaxBytes?: number;
}

/** Default of inlineMaxBytes. */
export const DEFAULT_INLINE_PARSE_BYTES = 65_536;

function isOutOfMemory(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY';
}

/**
 * DocumentParser on a piscina worker-thread pool (piscina rather than bare worker_threads: it already replaces a
 * terminated or crashed worker, terminates a running task's thread on abort, and passes resourceLimits). One document
 * cannot stall the process: the event loop only waits for a message; a parse past `timeoutMs` is aborted, which
 * terminates its thread (even one spinning in a busy loop) and the pool starts a new one for the next document; a parse
 * past `maxMemoryMb` of heap is stopped by V8. Both come back as `failed`-worthy values naming the setting.
 */
export class WorkerDocumentParser implements DocumentParser {
  private readonly pool: Piscina<ParseTask, LoadResult>;
  private readonly slots: Slots;
  private readonly inlineMaxBytes: number;
  private closed = false;

  constructor(private readonly options: WorkerParserOptions) {
    const entry = workerEntry(__dirname, 'parse.worker', 'parse worker', options.workerFile);
    this.slots = new Slots(options.workers);
    this.inlineMaxBytes = options.inlineMaxBytes ?? DEFAULT_INLINE_PARSE_BYTES;
    this.pool = new Piscina<ParseTask, LoadResult>({
      filename: entry.filename,
      ...(entry.tsEntry ? { workerData: { tsEntry: entry.tsEntry } } : {}),
      minThreads: 0,
      maxThreads: options.workers,
      idleTimeout: options.idleTimeoutMs ?? 30_000,
      resourceLimits: { maxOldGenerationSizeMb: options.maxMemoryMb },
    });
    // a worker that fails outside any task (none is running on it) must not crash the process
    this.pool.on('error', () => undefined);
  }

  /** Messages a worker posts (tests use them to see a parse start). */
  onWorkerMessage(listener: (message: unknown) => void): void {
    this.pool.on('message', listener);
  }

  async parse(request: ParseRequest): Promise<ParseOutcome> {
    // Small plain-text and Markdown documents on the calling thread: their parse is linear in their size (≈ 0.07 ms for
    // a 1 KB abstract) and cannot hang or balloon within this size, while a worker's round trip is two thread wake-ups —
    // ≈ 3–8 ms a document while ONNX Runtime keeps both cores busy, which made the loader ≈ 15 % of the stage time of an
    // ingestion with the default models (scripts/bench/README.md, ingest). Everything else (PDF, DOCX, HTML, archives,
    // large texts) keeps the worker's time and memory limits.
    if ((request.mimeType === MIME_TEXT || request.mimeType === MIME_MARKDOWN) && request.bytes.byteLength <= this.inlineMaxBytes) {
      const bytes = Buffer.from(request.bytes.buffer, request.bytes.byteOffset, request.bytes.byteLength);
      const result = await loadContent({ bytes, mimeType: request.mimeType, title: request.title, filename: request.filename }, this.options.limits);
      return this.outcome(result);
    }
    await this.slots.acquire();
    try {
      const task: ParseTask = {
        bytes: request.bytes,
        mimeType: request.mimeType,
        ...(request.title !== undefined ? { title: request.title } : {}),
        ...(request.filename !== undefined ? { filename: request.filename } : {}),
        limits: this.options.limits,
      };
      const result = await this.pool.run(task, { signal: AbortSignal.timeout(this.options.timeoutMs) });
      return this.outcome(result);
    } catch (err) {
      // closing aborts parses in flight: not the document's fault, so no failure value (the message is redelivered)
      if (this.closed) throw new Error('the document parser was closed while parsing', { cause: err });
      if (isAbort(err)) {
        return { ok: false, code: 'timeout', reason: `parsing took longer than ${this.options.timeoutMs} ms and was stopped (RAG_PARSE_TIMEOUT_MS)` };
      }
      if (isOutOfMemory(err)) {
        return { ok: false, code: 'out_of_memory', reason: `parsing needed more than ${this.options.maxMemoryMb} MB of memory and was stopped (RAG_PARSE_MAX_MEMORY_MB)` };
      }
      throw err;
    } finally {
      this.slots.release();
    }
  }

  private outcome(result: LoadResult): ParseOutcome {
    if (result.ok) return result.pages !== undefined ? { ok: true, title: result.title, blocks: result.blocks, pages: result.pages } : { ok: true, title: result.title, blocks: result.blocks };
    return { ok: false, code: result.code, reason: result.reason };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.pool.destroy();
  }
}

