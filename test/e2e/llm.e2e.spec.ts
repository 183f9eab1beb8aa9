import { OpenAiChatStandIn, type ChatCall, type ChatReply } from '../fakes/openai-chat';
import { api, removeDir, startServer, waitForStatus, type Server } from './harness';

/** The provider for these tests: a multi-query expansion, a HyDE passage, or a cited answer (or a 500 when told to fail). */
class FakeProvider extends OpenAiChatStandIn {
  readonly requests: { system: string; user: string; stream: boolean }[] = [];
  failAnswers = false;

  protected reply({ system, user, stream }: ChatCall): ChatReply {
    this.requests.push({ system, user, stream });
    if (system.includes('alternative phrasings')) return '1. swept wing crossflow instability\n2. leading edge vortices on swept wings';
    if (system.includes('could appear in a document')) return 'Crossflow vortices near the leading edge destabilise the swept-wing boundary layer.';
    if (this.failAnswers) return { status: 500, message: 'model overloaded' };
    return 'Crossflow vortices near the leading edge make it unstable [1].';
  }
}

describe('with an OpenAI-compatible LLM configured', () => {
  const provider = new FakeProvider();
  let server: Server;

  beforeAll(async () => {
    const baseUrl = await provider.start();
    server = await startServer(undefined, {
      RAG_LLM: 'openai',
      RAG_LLM_BASE_URL: baseUrl,
      RAG_LLM_MODEL: 'test-model',
      RAG_QUERY_EXPANSION: 'multi+hyde',
      RAG_LLM_TIMEOUT_MS: '5000',
    });
    await api(server, 'POST', '/v1/documents', {
      id: 'wing',
      text: 'Swept wings.\n\nCrossflow vortices make the boundary layer on a swept wing unstable near the leading edge.',
    });
    await api(server, 'POST', '/v1/documents', { id: 'heat', text: 'Heat shields.\n\nAblative heat shields absorb heat by pyrolysis.' });
    await waitForStatus(server, 'wing');
    await waitForStatus(server, 'heat');
  });
  afterAll(async () => {
    await server?.stop();
    removeDir(server.dataDir);
    await provider.stop();
  });

  it('expands the query, uses HyDE for dense search, and streams the LLM answer with its citation', async () => {
    const r = await api<{ answer: string; refused: boolean; citations: { ref: number; document_id: string }[]; degraded: string[]; timings_ms: Record<string, number> }>(
      server,
      'POST',
      '/v1/query',
      { question: 'What makes the boundary layer on a swept wing unstable?' },
    );
    expect(r.status).toBe(200);
    expect(r.body.answer).toBe('Crossflow vortices near the leading edge make it unstable [1].');
    expect(r.body.refused).toBe(false);
    expect(r.body.citations).toEqual([expect.objectContaining({ ref: 1, document_id: 'wing' })]);
    expect(r.body.degraded).toEqual([]);
    expect(r.body.timings_ms.rewrite).toBeGreaterThanOrEqual(0);
    const kinds = provider.requests.map((q) => (q.system.includes('alternative') ? 'multi' : q.system.includes('could appear') ? 'hyde' : 'answer'));
    expect(kinds.sort()).toEqual(['answer', 'hyde', 'multi']);
    const answerPrompt = provider.requests.find((q) => !q.system.includes('alternative') && !q.system.includes('could appear'))!;
    expect(answerPrompt.stream).toBe(true);
    expect(answerPrompt.user).toContain('[1]');
  });

  it('falls back to the extractive answer and reports llm degraded when the provider fails', async () => {
    provider.failAnswers = true;
    try {
      const r = await api<{ answer: string; citations: { document_id: string }[]; degraded: string[] }>(server, 'POST', '/v1/query', {
        question: 'How do ablative heat shields absorb heat?',
      });
      expect(r.status).toBe(200);
      expect(r.body.degraded).toContain('llm');
      // The fake provider's expansions are about swept wings whatever the question, so only check the evidence used.
      expect(r.body.answer).toMatch(/pyrolysis[^[]*\[\d\]/);
      expect(r.body.citations.map((c) => c.document_id)).toContain('heat');
    } finally {
      provider.failAnswers = false;
    }
  });
});
