import { loadConfig } from '@rag/platform';
import { LlmStandIn, refsContaining, type ChatRequest, type Reply } from './agent-standin';
import { api, removeDir, startServer, waitForStatus, type Server } from './harness';

/**
 * `mode: "agent"` (issue 16 item 3) through the embedded platform, against the OpenAI wire stand-in for
 * deterministic model behaviour: the stand-in plans from what the platform showed it (the passages found so far), so
 * a second hop can only name what the first hop found.
 */
interface Answer {
  answer: string;
  refused: boolean;
  citations: { ref: number; document_id: string }[];
  degraded: string[];
  timings_ms: Record<string, number>;
}

const QUESTION = 'In which city did the leader of the Zephyr project grow up?';
const hops = (t: Record<string, number>) => Object.keys(t).filter((k) => /^agent_hop\d+$/.test(k)).sort();

/** The planner of a careful model: find the leader, then look the leader up, then answer. */
function multiHopPlanner(r: ChatRequest): Reply {
  if (r.kind === 'plan') {
    const name = /led by the engineer ([A-Z]\w+ [A-Z]\w+)/.exec(r.user)?.[1];
    if (r.user.includes('Lyon')) return '{"action":"answer"}';
    if (name) return JSON.stringify({ action: 'keyword_search', query: `${name} childhood` });
    return '{"action":"keyword_search","query":"Zephyr project leader"}';
  }
  if (r.kind === 'answer') {
    const lead = refsContaining(r.user, 'Zephyr')[0];
    const city = refsContaining(r.user, 'Lyon')[0];
    if (lead && city) return `The Zephyr project is led by Alice Moreau [${lead}], who spent her childhood in Lyon [${city}].`;
    if (lead) return `The Zephyr project is led by Alice Moreau [${lead}].`;
    return 'I cannot answer this question from the provided sources.';
  }
  return '';
}

describe('mode: agent (multi-hop) against the OpenAI wire stand-in', () => {
  const llm = new LlmStandIn();
  let server: Server;

  beforeAll(async () => {
    const baseUrl = await llm.start();
    server = await startServer(undefined, {
      RAG_LLM: 'openai',
      RAG_LLM_BASE_URL: baseUrl,
      RAG_LLM_MODEL: 'test-model',
      RAG_LLM_TIMEOUT_MS: '5000',
      RAG_AGENT_MAX_STEPS: '3',
    });
    const docs = [
      { id: 'zephyr', title: 'Zephyr project', text: 'Zephyr project.\n\nThe Zephyr project, whose leader is named below, is led by the engineer Alice Moreau.' },
      { id: 'moreau', title: 'Alice Moreau', text: 'Alice Moreau.\n\nAlice Moreau spent her childhood years at Lyon, France.' },
      { id: 'heat', title: 'Heat shields', text: 'Heat shields.\n\nAblative heat shields absorb heat by pyrolysis.' },
      { id: 'wing', title: 'Swept wings', text: 'Swept wings.\n\nCrossflow vortices make the boundary layer on a swept wing unstable near the leading edge.' },
      // Passages that share words with the question, so that its own retrieval fills its top 3 without the second hop's.
      { id: 'city', title: 'City projects', text: 'City projects.\n\nThe city council chose a project leader for the new tram line.' },
      { id: 'grow', title: 'Growing up', text: 'Growing up.\n\nChildren who grow up in a city learn to use public transport early.' },
    ];
    for (const d of docs) expect((await api(server, 'POST', '/v1/documents', d)).status).toBe(202);
    for (const d of docs) await waitForStatus(server, d.id, 'indexed');
  }, 300_000);
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
    await llm.stop();
  });
  beforeEach(() => llm.reset());

  it('reaches the second passage only through the first, and cites both', async () => {
    // Single-shot retrieval of the question (what the agent's seed search is) does not find the second passage.
    for (const mode of ['hybrid', 'keyword']) {
      const direct = await api<{ results: { document_id: string }[] }>(server, 'POST', '/v1/retrieve', { query: QUESTION, mode, top_k: 3 });
      expect(direct.status).toBe(200);
      expect(direct.body.results.map((r) => r.document_id)).toContain('zephyr');
      expect(direct.body.results.map((r) => r.document_id)).not.toContain('moreau');
    }
    llm.script = multiHopPlanner;
    const single = await api<Answer>(server, 'POST', '/v1/query', { question: QUESTION, top_k: 3 });
    expect(single.body.citations.map((c) => c.document_id)).toEqual(['zephyr']);

    llm.reset();
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: QUESTION, mode: 'agent', top_k: 3 });
    expect(r.status).toBe(200);
    expect(r.body.refused).toBe(false);
    expect(r.body.degraded).toEqual([]);
    expect(r.body.citations.map((c) => c.document_id).sort()).toEqual(['moreau', 'zephyr']);
    expect(r.body.answer).toContain('Lyon');

    const plans = llm.of('plan');
    expect(plans).toHaveLength(2);
    // The first plan saw the question's own retrieval (the leader's passage) but not the second passage; the search
    // that found it names the leader, which only the first passage says.
    expect(plans[0]!.user).toContain('led by the engineer Alice Moreau');
    expect(plans[0]!.user).not.toContain('Lyon');
    expect(plans[0]!.user).toContain('Calls made: none.');
    expect(plans[1]!.user).toContain('Lyon');
    expect(plans[1]!.user).toContain('keyword_search "Alice Moreau childhood" -> 1 new passage(s)');
    expect(hops(r.body.timings_ms)).toEqual(['agent_hop1', 'agent_hop2']);
    expect(r.body.timings_ms.agent_seed).toBeGreaterThanOrEqual(0);
    expect(r.body.timings_ms.agent_plan).toBeGreaterThanOrEqual(0);
    expect(r.body.timings_ms.generate).toBeGreaterThanOrEqual(0);
    // One answer call, after the loop.
    expect(llm.of('answer')).toHaveLength(1);
  });

  it('never exceeds its cap, even when the LLM always wants one more search', async () => {
    let n = 0;
    llm.script = (r) => (r.kind === 'plan' ? JSON.stringify({ action: 'dense_search', query: `swept wing variant ${++n}` }) : r.kind === 'answer' ? 'Crossflow vortices [1].' : '');
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: 'What makes the boundary layer on a swept wing unstable?', mode: 'agent' });
    expect(r.status).toBe(200);
    expect(llm.of('plan')).toHaveLength(3);
    expect(hops(r.body.timings_ms)).toEqual(['agent_hop1', 'agent_hop2', 'agent_hop3']);
    expect(r.body.refused).toBe(false);
    expect(r.body.citations.length).toBeGreaterThan(0);
  });

  it('stops when the LLM repeats a call it already made', async () => {
    llm.script = (r) => (r.kind === 'plan' ? '{"action":"keyword_search","query":"Zephyr project leader"}' : r.kind === 'answer' ? 'Alice Moreau [1].' : '');
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: QUESTION, mode: 'agent', top_k: 3 });
    expect(r.status).toBe(200);
    expect(llm.of('plan')).toHaveLength(2);
    expect(hops(r.body.timings_ms)).toEqual(['agent_hop1', 'agent_hop2']);
    expect(r.body.citations.map((c) => c.document_id)).toEqual(['zephyr']);
  });

  it('repairs malformed JSON from the LLM, and degrades cleanly (llm) on what cannot be repaired', async () => {
    let plan = 0;
    llm.script = (r) => {
      if (r.kind === 'plan') return ++plan === 1 ? "Sure! Here is my next step:\n```\n{action: 'keyword_search', query: 'Zephyr project leader',}\n```" : 'I am not sure what to do next.';
      return r.kind === 'answer' ? multiHopPlanner(r) : '';
    };
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: QUESTION, mode: 'agent', top_k: 3 });
    expect(r.status).toBe(200);
    expect(llm.of('plan')).toHaveLength(2);
    // The repaired first action ran (it found the leader); the unusable second one ended the loop.
    expect(r.body.citations.map((c) => c.document_id)).toEqual(['zephyr']);
    expect(r.body.refused).toBe(false);
    expect(r.body.degraded).toEqual(['llm']);
    expect(hops(r.body.timings_ms)).toEqual(['agent_hop1', 'agent_hop2']);
  });

  it('answers from the seed (the question itself) when the LLM fails on the first step (provider error)', async () => {
    llm.script = (r) => (r.kind === 'plan' ? { status: 500, message: 'model overloaded' } : r.kind === 'answer' ? 'Ablative shields absorb heat by pyrolysis [1].' : '');
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: 'How do ablative heat shields absorb heat?', mode: 'agent' });
    expect(r.status).toBe(200);
    expect(r.body.degraded).toContain('llm');
    expect(r.body.refused).toBe(false);
    expect(r.body.citations[0]?.document_id).toBe('heat');
    expect(hops(r.body.timings_ms)).toEqual(['agent_hop1']);
  });

  it('ends with a refusal when the hops find nothing that answers', async () => {
    llm.script = (r) => (r.kind === 'plan' ? (r.user.includes('Calls made: none.') ? '{"action":"keyword_search","query":"Mona Lisa painter"}' : '{"action":"answer"}') : r.kind === 'answer' ? 'I cannot answer this question from the provided sources.' : '');
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: 'Who painted the Mona Lisa?', mode: 'agent' });
    expect(r.status).toBe(200);
    expect(r.body.refused).toBe(true);
    expect(r.body.citations).toEqual([]);
  });

  it('mode auto: a simple question goes single-shot (no planning call), a multi-hop one to the agent', async () => {
    llm.script = multiHopPlanner;
    const simple = await api<Answer>(server, 'POST', '/v1/query', { question: 'How do ablative heat shields absorb heat?', mode: 'auto' });
    expect(simple.status).toBe(200);
    expect(llm.of('plan')).toHaveLength(0);
    expect(hops(simple.body.timings_ms)).toEqual([]);
    // One answer call over today's single-shot retrieval, whose best source is the heat shield passage.
    expect(llm.of('answer')).toHaveLength(1);
    expect(refsContaining(llm.of('answer')[0]!.user, 'pyrolysis')[0]).toBe(1);
    llm.reset();

    const multi = await api<Answer>(server, 'POST', '/v1/query', { question: QUESTION, mode: 'auto' });
    expect(multi.status).toBe(200);
    expect(llm.of('plan').length).toBeGreaterThan(0);
    expect(multi.body.citations.map((c) => c.document_id).sort()).toEqual(['moreau', 'zephyr']);
  });

  it('streams the agent’s answer and rejects an unknown mode with 400', async () => {
    llm.script = multiHopPlanner;
    const res = await fetch(`${server.url}/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: QUESTION, mode: 'agent', stream: true }) });
    const text = await res.text();
    const deltas = [...text.matchAll(/event: delta\ndata: (.*)\n/g)].map((m) => (JSON.parse(m[1]!) as { text: string }).text).join('');
    const done = JSON.parse(/event: done\ndata: (.*)\n/.exec(text)![1]!) as Answer;
    expect(deltas).toBe(done.answer);
    expect(done.citations.map((c) => c.document_id).sort()).toEqual(['moreau', 'zephyr']);

    const bad = await api<{ error: { code: string; message: string } }>(server, 'POST', '/v1/query', { question: QUESTION, mode: 'wander' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('mode');
  });
});

describe('agent settings', () => {
  it('RAG_AGENT_MAX_STEPS is 3 by default and at most 5; RAG_AGENT=auto needs an LLM', () => {
    expect(loadConfig({}).RAG_AGENT_MAX_STEPS).toBe(3);
    expect(loadConfig({ RAG_AGENT_MAX_STEPS: '5' }).RAG_AGENT_MAX_STEPS).toBe(5);
    expect(() => loadConfig({ RAG_AGENT_MAX_STEPS: '6' })).toThrow(/RAG_AGENT_MAX_STEPS/);
    expect(() => loadConfig({ RAG_AGENT: 'auto' })).toThrow(/RAG_AGENT=auto needs an LLM/);
  });

  it('without an LLM, mode agent answers single-shot and says llm is degraded', async () => {
    const server = await startServer();
    try {
      await api(server, 'POST', '/v1/documents', { id: 'heat', text: 'Heat shields.\n\nAblative heat shields absorb heat by pyrolysis.' });
      await waitForStatus(server, 'heat', 'indexed');
      const r = await api<Answer>(server, 'POST', '/v1/query', { question: 'How do ablative heat shields absorb heat?', mode: 'agent' });
      expect(r.status).toBe(200);
      expect(r.body.degraded).toEqual(['llm']);
      expect(r.body.citations[0]?.document_id).toBe('heat');
      expect(hops(r.body.timings_ms)).toEqual([]);
    } finally {
      await server.stop();
      removeDir(server.dataDir);
    }
  }, 180_000);
});
