import { Global, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ScoredChunk } from '@rag/contracts';
import type { GenerateCall } from '@rag/application';
import { loadConfig, type AppConfig } from '@rag/platform';
import { GROUNDING, LLM, type Grounding } from '@rag/ports';
import { CONFIG, GENERATE_CALL } from '../core/tokens';
import { GeneratorModule } from './generator.module';

/*
 * Issue 13 item 3: the generator's gate and extractive answerer run on a worker pool when RAG_GENERATOR_WORKERS > 0, in
 * process with 0; the answers are the same, and the pool's threads stop with the application.
 */
const sources: ScoredChunk[] = [
  { chunk_id: 'doc:a#v1#0', document_id: 'doc:a', title: 'Wings', heading_path: [], score: 3, text: 'The wing root carries the bending load.', parent_text: 'Wing structure. The wing root carries the bending load. Spars take shear.' },
  { chunk_id: 'doc:b#v1#0', document_id: 'doc:b', title: '尤金袋鼠', heading_path: [], score: 2, text: '尤金袋鼠分布在澳大利亚南部地区。它们体型较小。' },
];

async function generatorWith(workers: number) {
  const config: AppConfig = loadConfig({ RAG_DATA_DIR: '/nonexistent-unused', RAG_GENERATOR_WORKERS: String(workers) });
  @Global()
  @Module({ providers: [{ provide: CONFIG, useValue: config }, { provide: LLM, useValue: null }], exports: [CONFIG, LLM] })
  class Deps {}
  const moduleRef = await Test.createTestingModule({ imports: [Deps, GeneratorModule] }).compile();
  await moduleRef.init();
  return { moduleRef, generator: moduleRef.get<GenerateCall>(GENERATE_CALL), grounding: moduleRef.get<Grounding>(GROUNDING) };
}

describe('GeneratorModule grounding wiring', () => {
  it('RAG_GENERATOR_WORKERS=1 answers exactly as RAG_GENERATOR_WORKERS=0, from a worker thread; close() stops the pool', async () => {
    const inProcess = await generatorWith(0);
    const pooled = await generatorWith(1);
    try {
      expect(inProcess.grounding.constructor.name).toBe('InProcessGrounding');
      expect(pooled.grounding.constructor.name).toBe('WorkerGrounding');
      for (const q of ['what does the wing root carry', '尤金袋鼠分布在哪些地区', 'capital of france']) {
        expect(await pooled.generator.generate(q, sources)).toEqual(await inProcess.generator.generate(q, sources));
      }
      expect((pooled.grounding as unknown as { stats(): { inWorker: number } }).stats().inWorker).toBe(3);
    } finally {
      await inProcess.moduleRef.close();
      await pooled.moduleRef.close();
    }
    // shut down with the application: a task after close is refused, not queued for a thread that is gone
    await expect(pooled.grounding.run({ mode: 'gate', question: 'x', sources: [], threshold: 0.5 })).rejects.toThrow(/closed/);
  }, 60_000);
});
