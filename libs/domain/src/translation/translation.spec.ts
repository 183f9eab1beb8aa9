import { BilingualDictionary, buildDictionary, cleanSense, cleanSenses, englishKey, isSingleCharProperNoun, parseCedict } from './dictionary';
import { balancedKeywordQuery, languageShare, scriptLanguage, segmentChinese, segmentHan, translateEnToZh, translateQuery, translateZhToEn, translationForEvidence, refineTranslation } from './translate';

// A few lines of CC-CEDICT's text format (cedict_ts.u8), as MDBG publishes it (CC BY-SA 4.0): enough for each rule.
const CEDICT = `# CC-CEDICT
# a comment line
邊界層 边界层 [bian1 jie4 ceng2] /boundary layer/
邊界 边界 [bian1 jie4] /boundary; border/
界 界 [jie4] /boundary; scope; extent/
層 层 [ceng2] /layer; stratum/CL:個|个[ge4]/
傳熱 传热 [chuan2 re4] /heat transfer/
壓力 压力 [ya1 li4] /pressure/
壓 压 [ya1] /to press; to push down/
力 力 [li4] /power; force; strength/
波 波 [Bo1] /Poland (abbr.)/surname Bo/
波 波 [bo1] /wave; ripple/
激波 激波 [ji1 bo1] /shock wave/
研究 研究 [yan2 jiu1] /research; a study; to study; to look into/
什麼 什么 [shen2 me5] /what?; something; anything/
的 的 [de5] /of; ~'s (possessive particle)/
模型 模型 [mo2 xing2] /model; mold; matrix/
典範 典范 [dian3 fan4] /model; example; paragon/
數學模型 数学模型 [shu4 xue2 mo2 xing2] /mathematical model/
模型飛機 模型飞机 [mo2 xing2 fei1 ji1] /model airplane/
是 是 [shi4] /variant of 是[shi4]/
牛頓 牛顿 [Niu2 dun4] /Newton (name)/newton (SI unit of force)/
時 时 [shi2] /o'clock; time; when/
起來 起来 [qi3 lai5] /to stand up; to get up/
`;

const dict = BilingualDictionary.of(parseCedict(CEDICT));

describe('parseCedict', () => {
  it('reads headwords, reading and senses, and skips comments and malformed lines', () => {
    const entries = parseCedict(`${CEDICT}not a dictionary line\n`);
    expect(entries).toHaveLength(22);
    expect(entries[0]).toEqual({ traditional: '邊界層', simplified: '边界层', pinyin: 'bian1 jie4 ceng2', senses: ['boundary layer'] });
  });
});

describe('cleanSense', () => {
  it('keeps the words a document would use', () => {
    expect(cleanSense('to look into')).toBe('look into');
    expect(cleanSense('layer (of rock)')).toBe('layer');
    expect(cleanSense('board (CL:塊|块[kuai4])')).toBe('board');
    expect(cleanSense("o'clock")).toBe('o clock');
  });
  it('drops pointers, classifiers, surnames and definitions', () => {
    expect(cleanSense('variant of 是[shi4]')).toBeUndefined();
    expect(cleanSense('CL:個|个[ge4]')).toBeUndefined();
    expect(cleanSense('name of a river')).toBeUndefined();
    expect(cleanSense('surname Bo')).toBeUndefined();
    expect(cleanSense('the emergency number for law enforcement in Mainland China')).toBeUndefined();
  });
  it('splits near-synonyms joined by a semicolon, without repeats', () => {
    expect(cleanSenses(['boundary; border', 'border'])).toEqual(['boundary', 'border']);
  });
});

describe('BilingualDictionary', () => {
  it('maps a headword, simplified or traditional, to its cleaned senses in dictionary order', () => {
    expect(dict.english('边界层')).toEqual(['boundary layer']);
    expect(dict.english('邊界層')).toEqual(['boundary layer']);
    expect(dict.english('研究')).toEqual(['research', 'study', 'look into']);
    expect(dict.has('是')).toBe(false); // only a pointer sense
  });
  it('leaves out single characters read as proper nouns, keeps multi-character ones', () => {
    expect(isSingleCharProperNoun({ simplified: '波', traditional: '波', pinyin: 'Bo1', senses: [] })).toBe(true);
    expect(dict.english('波')).toEqual(['wave', 'ripple']);
    expect(dict.english('牛顿')?.[0]).toBe('newton');
  });
  it('inverts the senses by their stemmed content words, the common word before the rare synonym', () => {
    expect(englishKey('the Boundary Layers')).toBe(englishKey('boundary layer'));
    expect(dict.chinese(englishKey('boundary layer'))?.[0]?.word).toBe('边界层');
    // 模型 and 典范 both have "model" as their first sense; 模型 is part of other headwords (数学模型, 模型飞机).
    expect(dict.chinese(englishKey('model'))?.map((r) => r.word).slice(0, 2)).toEqual(['模型', '典范']);
  });
  it('does not index a sense that is one content word plus function words under that word', () => {
    const d = BilingualDictionary.of(parseCedict('在逃 在逃 [zai4 tao2] /at large (of a criminal)/escaped/\n大 大 [da4] /big; large/\n'));
    expect(d.english('在逃')).toEqual(['at large', 'escaped']); // zh → en keeps it
    expect(d.chinese(englishKey('large'))?.map((r) => r.word)).toEqual(['大']);
  });
  it('round-trips through its snapshot (the derived-table cache)', () => {
    const again = BilingualDictionary.fromSnapshot(JSON.parse(JSON.stringify(dict.snapshot())));
    expect(again.snapshot()).toEqual(dict.snapshot());
    expect(again.english('压力')).toEqual(['pressure']);
    expect(() => BilingualDictionary.fromSnapshot({ ...dict.snapshot(), version: 0 })).toThrow(/version/);
  });
  it('builds the same dictionary in steps, pausing between them', async () => {
    let pauses = 0;
    const stepped = await buildDictionary(parseCedict(CEDICT), () => Promise.resolve(void pauses++), 5);
    expect(stepped.snapshot()).toEqual(dict.snapshot());
    expect(pauses).toBe(5); // 20 entries / 5, then one before the reverse index
  });
});

describe('segmentation', () => {
  it('segments a Han run by maximum matching, the longest headword first', () => {
    expect(segmentHan('边界层', dict)).toEqual(['边界层']);
    expect(segmentHan('边界层传热', dict)).toEqual(['边界层', '传热']);
    // Characters no headword covers stand alone.
    expect(segmentHan('边界层X', dict)).toEqual(['边界层', 'X']);
  });
  it('keeps the segmentation with fewer words when forward and backward disagree', () => {
    // forward: 边界 | 层压 ✗ → 边界 层 压力; backward: 压力 ← 层 ← 边界 … both 3; fewer single characters wins.
    expect(segmentHan('边界层压力', dict)).toEqual(['边界层', '压力']);
  });
  it('passes Latin words and numbers through', () => {
    expect(segmentChinese('NACA 0012 的压力', dict)).toEqual(['NACA', '0012', '的', '压力']);
  });
});

describe('translateZhToEn', () => {
  it('translates content words, drops question words and particles', () => {
    const t = translateZhToEn('什么研究边界层的传热？', dict)!;
    expect(t.target).toBe('en');
    expect(t.terms.map((x) => x.source)).toEqual(['研究', '边界层', '传热']);
    expect(t.text).toBe('research study look into boundary layer heat transfer');
  });
  it('drops function words whose glosses would be noise: a time clause, a directional complement', () => {
    expect(translateZhToEn('研究边界层时压力联系起来', dict)?.terms.map((x) => x.source)).toEqual(['研究', '边界层', '压力']);
  });
  it('keeps one sense of a single character', () => {
    expect(translateZhToEn('压', dict)?.text).toBe('press');
  });
  it('prefers equivalents (one or two words) to explanations, and uses an explanation when a word has nothing shorter', () => {
    const d = BilingualDictionary.of(
      parseCedict(`目前 目前 [mu4 qian2] /at the present time/currently/
求得 求得 [qiu2 de2] /to try to obtain/to look for and obtain/
壓力 压力 [ya1 li4] /pressure/`),
    );
    const t = translateZhToEn('目前求得压力', d)!;
    expect(t.terms.map((x) => [x.source, x.target])).toEqual([
      ['目前', ['currently']],
      ['求得', ['try to obtain', 'look for and obtain']],
      ['压力', ['pressure']],
    ]);
    expect(t.terms[0]!.alternatives).toEqual(['currently']); // the gate reads the same equivalents
  });
  it('takes its first few translations among the glosses that mean something (one that cleans to nothing takes no slot)', () => {
    const d = BilingualDictionary.of(parseCedict('測試 测试 [ce4 shi4] /the/test/trial/examination/'));
    expect(translateZhToEn('测试', d)?.terms[0]!.target).toEqual(['test', 'trial', 'examination']);
  });
  it('is undefined when nothing translates', () => {
    expect(translateZhToEn('什么的', dict)).toBeUndefined();
  });
});

describe('translateEnToZh', () => {
  it('matches the longest phrase first and keeps unknown names as written', () => {
    const t = translateEnToZh('What is the pressure in a boundary layer of NACA airfoils?', dict)!;
    expect(t.target).toBe('zh');
    expect(t.terms.map(({ source, target }) => ({ source, target }))).toEqual([
      { source: 'pressure', target: ['压力'] },
      { source: 'boundary layer', target: ['边界层'] },
      { source: 'naca', target: ['naca'] },
      { source: 'airfoils', target: ['airfoils'] },
    ]);
  });
  it('is undefined when no word has a Chinese translation', () => {
    expect(translateEnToZh('what about NACA airfoils', dict)).toBeUndefined();
  });
});

describe('translateQuery', () => {
  it('translates by the question script', () => {
    expect(translateQuery('边界层的压力', dict)?.target).toBe('en');
    expect(translateQuery('boundary layer pressure', dict)?.target).toBe('zh');
    expect(translateQuery('？？ 123', dict)).toBeUndefined();
  });
});

describe('script helpers', () => {
  it('tells the language of a text by its script and the share of texts in one language', () => {
    expect(scriptLanguage('边界层的压力 (NACA)')).toBe('zh');
    // A Chinese character counts like a Latin word (scriptWeights).
    expect(scriptLanguage('the boundary layer of a wing 边界层')).toBe('en');
    expect(scriptLanguage('the boundary layer 边界层')).toBe('zh');
    expect(languageShare(['边界层', 'boundary layer', 'shock wave', '激波'], 'en')).toBe(0.5);
    expect(languageShare([], 'zh')).toBe(0);
  });
});

describe('refineTranslation', () => {
  it("narrows each word's translations to those the retrieved texts use, keeping words no text has", () => {
    const t = translateZhToEn('研究边界层', dict)!;
    expect(t.terms[0]!.target).toEqual(['research', 'study', 'look into']);
    const r = refineTranslation(t, ['A study of the laminar boundary layer.', 'Boundary layer growth.'])!;
    expect(r.terms.map((x) => x.target)).toEqual([['study'], ['boundary layer']]);
    expect(r.text).toBe('study boundary layer');
    // a word none of the texts has keeps its translations; nothing narrowed: undefined
    expect(refineTranslation(t, ['Research on the boundary layer: a study.'])!.text).toBe('research study boundary layer');
    expect(refineTranslation(t, ['Nothing related here.'])).toBeUndefined();
  });
  it('takes a Chinese alternative beyond the first ones when the texts write it, at most as many as the word had', () => {
    const t = { target: 'zh' as const, text: '典范', terms: [{ source: 'model', target: ['典范'], alternatives: ['典范', '模型', '模式'] }] };
    expect(refineTranslation(t, ['风洞中的模型试验与模式'])!.text).toBe('模型');
    expect(refineTranslation(t, ['典范'])).toBeUndefined();
  });
});

describe('balancedKeywordQuery', () => {
  it("writes each of a word's n translations R/n times, so that every source word weighs the same", () => {
    const t = translateZhToEn('研究边界层', dict)!;
    // 研究: research, study, look into (3); 边界层: boundary layer (1) → R = 3
    expect(balancedKeywordQuery(t)).toBe('research study look into boundary layer boundary layer boundary layer');
    const two = { target: 'en' as const, text: 'a b c', terms: [{ source: '甲', target: ['a', 'b'] }, { source: '乙', target: ['c'] }, { source: '丙', target: ['d', 'e', 'f'] }] };
    // counts 2, 1, 3 → R = 6: 3 times each of two, 6 times the one, twice each of three
    expect(balancedKeywordQuery(two).split(' ').reduce<Record<string, number>>((m, w) => ({ ...m, [w]: (m[w] ?? 0) + 1 }), {})).toEqual({ a: 3, b: 3, c: 6, d: 2, e: 2, f: 2 });
  });
  it('caps the repeats at the resolution (rounded) and keeps a one-sense query as it is', () => {
    const four = { target: 'en' as const, text: '', terms: [{ source: '甲', target: ['a', 'b', 'c', 'd'] }, { source: '乙', target: ['e', 'f', 'g'] }, { source: '丙', target: ['h'] }] };
    const n = balancedKeywordQuery(four).split(' ').reduce<Record<string, number>>((m, w) => ({ ...m, [w]: (m[w] ?? 0) + 1 }), {});
    expect(n).toEqual({ a: 2, b: 2, c: 2, d: 2, e: 2, f: 2, g: 2, h: 6 });
    expect(balancedKeywordQuery(translateZhToEn('边界层', dict)!)).toBe('boundary layer');
  });
});

describe('translationForEvidence', () => {
  it('reads each word as the alternative the sources contain, else its first one', () => {
    const t = translateZhToEn('研究边界层', dict)!;
    expect(translationForEvidence(t, ['A study of the laminar boundary layer.'])).toBe('study boundary layer');
    expect(translationForEvidence(t, ['Nothing related here.'])).toBe('research boundary layer');
  });
  it('matches Chinese alternatives as substrings of the sources, the extra alternatives included', () => {
    const t = { target: 'zh' as const, text: '典范', terms: [{ source: 'model', target: ['典范'], alternatives: ['典范', '模型'] }] };
    expect(translationForEvidence(t, ['风洞中的模型试验'])).toBe('模型');
    expect(translationForEvidence(t, ['没有关系的文字'])).toBe('典范');
  });
  it('leaves out of the Chinese gate question a name the dictionary cannot translate, unless a source has it as written', () => {
    const t = translateEnToZh('Pennetta boundary layer', dict)!;
    expect(t.text).toBe('pennetta 边界层');
    expect(translationForEvidence(t, ['边界层的厚度'])).toBe('边界层');
    expect(translationForEvidence(t, ['Pennetta 的边界层'])).toBe('pennetta 边界层');
  });
});
