import type { ScoredChunk } from '@rag/contracts';
import { REFUSAL_MESSAGE, type VerifyMode } from '@rag/domain';
import type { ChatMessage, JsonSchema, Llm } from '@rag/ports';
import { GeneratorService } from './generator.service';

const chunk = (id: string, text: string, score: number): ScoredChunk => ({
  chunk_id: `doc:${id}#v1#0`,
  document_id: `doc:${id}`,
  title: `Title ${id}`,
  text,
  score,
  heading_path: [],
});

const sources = [
  chunk('a', 'The wing root carries the bending load. Spars take the shear of the wing.', 3),
  chunk('b', 'Aeroelastic models of heated aircraft must obey similarity laws.', 2),
];
const base = { refusalThreshold: 0.3, llmTimeoutMs: 5000, maxSources: 5 };
const question = 'what does the wing root carry and what do spars take';

/**
 * A hosted LLM is a boundary this suite cannot reach: this stands in for one, writing a fixed completion (streamed
 * word by word) or, for generateJson, a fixed raw JSON text — what a provider's structured output returns.
 */
function scriptedLlm(text: string, json?: string): Llm {
  const llm: Llm = {
    id: 'scripted',
    async *stream() {
      for (const w of text.split(/(?<= )/)) yield w;
    },
    async complete() {
      return { text };
    },
  };
  if (json !== undefined) {
    llm.generateJson = async <T>(_m: ChatMessage[], _s: JsonSchema) => {
      let value: unknown;
      try {
        value = JSON.parse(json);
      } catch {
        value = undefined;
      }
      return { value: value as T, text: json };
    };
  }
  return llm;
}

const withFalse = 'The wing root carries the bending load [1]. Heat shields ablate to absorb re-entry heat [1].';

describe('GeneratorService statements and verification (RAG_VERIFY)', () => {
  it('the extractive answer carries its sentences as statements, each supported by the source it cites', async () => {
    const r = await new GeneratorService(null, base).generate(question, sources);
    expect(r.refused).toBe(false);
    expect(r.statements.length).toBeGreaterThan(0);
    for (const s of r.statements) {
      expect(s.supported).toBe(true);
      expect(s.support).toBe(1);
      expect(r.cited_refs).toEqual(expect.arrayContaining(s.source_ids));
    }
  });

  const run = (mode: VerifyMode, onDelta?: (t: string) => void) =>
    new GeneratorService(scriptedLlm(withFalse), { ...base, verify: mode }).generate(question, sources, onDelta);

  it('mark: keeps the LLM answer, the false statement marked unsupported', async () => {
    const r = await run('mark');
    expect(r.answer).toBe(withFalse);
    expect(r.statements.map((s) => s.supported)).toEqual([true, false]);
  });

  it('drop: the answer is rewritten from the supported statements', async () => {
    const r = await run('drop');
    expect(r.refused).toBe(false);
    expect(r.answer).toBe('The wing root carries the bending load [1].');
    expect(r.statements).toHaveLength(1);
  });

  it('refuse: an unsupported statement turns the answer into a refusal, also after streaming', async () => {
    const deltas: string[] = [];
    const r = await run('refuse', (t) => deltas.push(t));
    expect(deltas.join('')).toBe(withFalse);
    expect(r).toMatchObject({ refused: true, answer: REFUSAL_MESSAGE, cited_refs: [], statements: [] });
  });

  it('structured output: JSON statements (repaired when malformed) become the answer; unparseable JSON falls back to the streamed text', async () => {
    const json = '```json\n{"statements": [{"text": "The wing root carries the bending load.", "source_ids": [1]}, {"text": "Spars take the shear.", "source_ids": [1],}]}\n```';
    const r = await new GeneratorService(scriptedLlm('unused', json), base).generate(question, sources);
    expect(r.answer).toBe('The wing root carries the bending load [1]. Spars take the shear [1].');
    expect(r.statements.every((s) => s.supported)).toBe(true);
    const fallback = await new GeneratorService(scriptedLlm(withFalse, 'not json at all'), base).generate(question, sources);
    expect(fallback.answer).toBe(withFalse);
    expect(fallback.statements).toHaveLength(2);
  });

  it('structured output cut at the token limit keeps the statements written so far, without a second call', async () => {
    let streamed = false;
    const llm: Llm = {
      id: 'truncating',
      async *stream() {
        streamed = true;
        yield 'unused';
      },
      async complete() {
        return { text: '' };
      },
      async generateJson() {
        // What the local adapter throws when the JSON answer hits maxTokens (AppError with the text so far).
        throw Object.assign(new Error('local LLM: the JSON answer was cut at 24 tokens'), { details: { text: '{"statements": [{"text": "The wing root carries the bending load.", "source_ids": [1]}, {"text": "Spa' } });
      },
    };
    const r = await new GeneratorService(llm, base).generate(question, sources);
    expect(streamed).toBe(false);
    expect(r.answer).toBe('The wing root carries the bending load [1]. Spa');
    expect(r.statements.map((s) => s.supported)).toEqual([true, false]);
  });

  it('the verifier uses the embedder for statements lexical overlap leaves unsupported', async () => {
    const seen: string[] = [];
    // Embeddings at the port: a paraphrase and its source get the same vector (cosine 1), everything else orthogonal.
    const embed = async (text: string) => {
      seen.push(text);
      return Float32Array.from(text.startsWith('The wing root') || text.startsWith('Its base') ? [1, 0] : [0, 1]);
    };
    const paraphrase = 'Its base bears the flexural stress [1].';
    const r = await new GeneratorService(scriptedLlm(paraphrase), { ...base, verifierEmbed: () => embed }).generate(question, sources);
    expect(r.statements[0]!.supported).toBe(true);
    expect(seen).toContain('Its base bears the flexural stress.');
    const lexicalOnly = await new GeneratorService(scriptedLlm(paraphrase), base).generate(question, sources);
    expect(lexicalOnly.statements[0]!.supported).toBe(false);
  });
});
