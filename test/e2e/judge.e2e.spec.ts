import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbedder } from '@rag/adapters';
import { cosine } from '@rag/domain';
import { loadConfig, setLogLevel } from '@rag/platform';
import { createEmbeddedContext } from '@rag/services';
import { evaluateMode, ingestDataset } from '../../apps/cli/src/eval';
import { AnswerJudge, judgeFor } from '../../apps/cli/src/judge';
import { InProcessClient } from '../../apps/cli/src/platform-client';
import { DEFAULT_LOCAL_MODEL, LocalLlm, resolveLocalModel } from '../../libs/adapters/src/local-llm';
import { ensureTestModels, TEST_MODELS_DIR } from '../../libs/adapters/src/onnx-embedder/test-models';
import { removeDir } from './harness';
import { OpenAiChatStandIn, type ChatCall, type ChatReply } from '../fakes/openai-chat';

setLogLevel('error');

/**
 * `rag eval --judge` (issue 16 item 6): the RAGAS faithfulness and answer relevancy of the eval's answers, judged by
 * the configured LLM. The OpenAI wire stand-in plays a judge with known verdicts, so the figures are exact; the local
 * model (a BASE model) runs the same calls schema-constrained, for the mechanics only.
 */
const STATEMENTS = ['Crossflow vortices destabilise the boundary layer.', 'The instability is near the leading edge.', 'Swept wings are made of cheese.'];
const GENERATED = ['What destabilises the boundary layer on a swept wing?', 'Why is a swept wing boundary layer unstable?', 'What are crossflow vortices?'];

class JudgeProvider extends OpenAiChatStandIn {
  readonly seen: string[] = [];

  protected reply({ system }: ChatCall): ChatReply {
    if (system.includes('standalone statements')) {
      this.seen.push('statements');
      return `Here you go:\n\`\`\`json\n${JSON.stringify({ statements: STATEMENTS })}\n\`\`\``;
    }
    if (system.includes('Judge the faithfulness')) {
      this.seen.push('verdicts');
      // two of the three statements are supported by the context
      return JSON.stringify({ verdicts: STATEMENTS.map((s, i) => ({ statement: s, reason: 'r', verdict: i < 2 ? 1 : 0 })) });
    }
    if (system.includes('different questions')) {
      this.seen.push('questions');
      return JSON.stringify({ questions: GENERATED, noncommittal: 0 });
    }
    return 'Crossflow vortices make the boundary layer on a swept wing unstable near the leading edge [1].';
  }
}

const QUESTION = 'What makes the boundary layer on a swept wing unstable?';

function writeDataset(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rag-judge-ds-'));
  const corpus = [
    { _id: 'wing', title: 'Swept wings', text: 'Crossflow vortices make the boundary layer on a swept wing unstable near the leading edge.' },
    { _id: 'heat', title: 'Heat shields', text: 'Ablative heat shields absorb heat by pyrolysis during atmospheric entry.' },
  ];
  writeFileSync(join(dir, 'corpus.jsonl'), corpus.map((d) => JSON.stringify(d)).join('\n') + '\n');
  writeFileSync(join(dir, 'queries.jsonl'), JSON.stringify({ _id: 'q1', text: QUESTION }) + '\n');
  mkdirSync(join(dir, 'qrels'));
  writeFileSync(join(dir, 'qrels', 'test.tsv'), 'query-id\tcorpus-id\tscore\nq1\twing\t1\n');
  return dir;
}

describe('rag eval --judge with an OpenAI-compatible judge (wire stand-in)', () => {
  const provider = new JudgeProvider();
  let dataset: string;
  let dataDir: string;

  beforeAll(async () => {
    dataset = writeDataset();
    dataDir = mkdtempSync(join(tmpdir(), 'rag-judge-'));
  });
  afterAll(async () => {
    removeDir(dataset);
    removeDir(dataDir);
    await provider.stop();
  });

  it('reports faithfulness and answer relevancy per RAGAS beside the retrieval metrics, and which model judged', async () => {
    const baseUrl = await provider.start();
    const cfg = loadConfig({ RAG_EMBEDDER: 'hashing', RAG_LLM: 'openai', RAG_LLM_BASE_URL: baseUrl, RAG_LLM_MODEL: 'judge-model', RAG_DATA_DIR: dataDir, RAG_LLM_TIMEOUT_MS: '5000' });
    const client = new InProcessClient(await createEmbeddedContext(cfg));
    try {
      await ingestDataset(client, dataset);
      const judge = judgeFor(client.handles, cfg, true);
      const r = (await evaluateMode(client, dataset, 'hybrid', { answers: true, judge })) as Record<string, unknown>;
      expect(r).toMatchObject({ judge_model: 'openai:judge-model', judged_answers: 1, judge_skipped_refused: 0, faithfulness_unjudged: 0, answer_relevancy_unjudged: 0, judge_failed_calls: 0 });
      // 2 of 3 statements supported
      expect(r.faithfulness).toBe(0.6667);
      // mean cosine of the question to the three generated questions, with the platform's own embedder
      const embedder = await createEmbedder(cfg);
      const [q, ...g] = await embedder.embed([QUESTION, ...GENERATED], 'query');
      const expected = g.reduce((s, v) => s + cosine(q!, v), 0) / g.length;
      expect(r.answer_relevancy as number).toBeCloseTo(expected, 3);
      expect(expected).toBeGreaterThan(0.1);
      expect(provider.seen.sort()).toEqual(['questions', 'statements', 'verdicts']);
      // the retrieval metrics are still there
      expect(r.ndcg_at_10).toBe(1);
    } finally {
      await client.close();
    }
  }, 120_000);

  it('refuses --judge without an LLM, and with --no-answers', async () => {
    const cfg = loadConfig({ RAG_EMBEDDER: 'hashing', RAG_DATA_DIR: mkdtempSync(join(tmpdir(), 'rag-judge-none-')) });
    const client = new InProcessClient(await createEmbeddedContext(cfg));
    try {
      expect(() => judgeFor(client.handles, cfg, true)).toThrow(/--judge needs an LLM/);
      expect(() => judgeFor(client.handles, cfg, false)).toThrow(/--no-answers/);
    } finally {
      await client.close();
      removeDir(cfg.dataDir);
    }
  });
});

describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('the judge on RAG_LLM=local (real GGUF model, schema-constrained)', () => {
  beforeAll(() => ensureTestModels([DEFAULT_LOCAL_MODEL.name]), 15 * 60_000);

  it('runs the three judge calls constrained to their schemas and scores within range', async () => {
    const llm = await LocalLlm.create({ modelPath: await resolveLocalModel({ modelsDir: TEST_MODELS_DIR, autoFetch: false }), threads: 2, contextSize: 4096, timeoutMs: 120_000 });
    const embedder = await createEmbedder(loadConfig({ RAG_EMBEDDER: 'hashing' }));
    try {
      const judge = new AnswerJudge(llm, embedder, { maxTokens: 160 });
      const j = await judge.judge(QUESTION, 'Crossflow vortices make the boundary layer unstable near the leading edge.', [
        'Crossflow vortices make the boundary layer on a swept wing unstable near the leading edge.',
      ]);
      const report = judge.report();
      expect(report.judge_model).toBe('local:gemma-3-270m-q4_k_m');
      // A base model: whatever it says, the scores are in range or null (its output unusable), never anything else.
      for (const v of [j.faithfulness, j.answer_relevancy]) if (v !== null) expect(v >= -1 && v <= 1).toBe(true);
      // The grammar makes every completed call parse; a call cut at maxTokens counts as failed, not as a score.
      expect(j.faithfulness !== null || j.answer_relevancy !== null || (report.judge_failed_calls as number) > 0).toBe(true);
    } finally {
      await llm.close();
    }
  }, 10 * 60_000);
});
