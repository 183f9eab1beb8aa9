import { setLogLevel } from '@rag/platform';
import type { VectorStore } from '@rag/ports';
import { createPipeline } from './pipeline';

setLogLevel('silent');

const docs = [
  { id: 'inlet', text: 'Supersonic inlets.\n\nA supersonic inlet decelerates the flow through oblique shocks before a terminal normal shock.', metadata: { team: 'propulsion' } },
  { id: 'wing', text: 'Swept wings.\n\nCrossflow vortices make the boundary layer on a swept wing unstable near the leading edge.', metadata: { team: 'aero' } },
  { id: 'flutter', text: 'Panel flutter.\n\nPanel flutter is a self-excited oscillation of a thin skin panel exposed to supersonic flow.', metadata: { team: 'structures' } },
];

describe('query orchestration', () => {
  it('answers from keyword search with degraded dense when the vector store fails, and recovers when it is back', async () => {
    let down = false;
    const p = await createPipeline({
      vectors: (real) =>
        new Proxy(real, {
          get(target, prop, receiver) {
            if (prop === 'search' && down) return async () => Promise.reject(new Error('vector store unavailable'));
            return Reflect.get(target, prop, receiver) as unknown;
          },
        }) as VectorStore,
    });
    try {
      for (const d of docs) await p.documents.submit({ id: d.id, text: d.text, metadata: d.metadata }, 'default');
      await p.bus.drain();
      down = true;
      const a = await p.query.answer({ question: 'What makes the boundary layer on a swept wing unstable?' }, { tenant: 'default' });
      expect(a.degraded).toContain('dense');
      expect(a.refused).toBe(false);
      expect(a.citations[0]?.document_id).toBe('wing');
      down = false;
      const b = await p.query.answer({ question: 'What makes the boundary layer on a swept wing unstable?' }, { tenant: 'default' });
      expect(b.degraded).not.toContain('dense');
      expect(b.citations[0]?.document_id).toBe('wing');
    } finally {
      await p.close();
    }
  });

  it('applies filters, isolates tenants, refuses unrelated questions and reports the missing reranker when asked for one', async () => {
    const p = await createPipeline();
    try {
      for (const d of docs) await p.documents.submit({ id: d.id, text: d.text, metadata: d.metadata }, 'default');
      await p.documents.submit({ id: 'other-tenant', text: 'Swept wings of tenant B.\n\nCrossflow vortices are secret here.' }, 'b');
      await p.bus.drain();
      const filtered = await p.query.retrieve({ question: 'supersonic flow', filters: { team: 'structures' } }, { tenant: 'default' });
      expect(filtered.results.map((r) => r.document_id)).toEqual(['flutter']);
      const isolated = await p.query.retrieve({ question: 'crossflow vortices swept wing secret' }, { tenant: 'default' });
      expect(isolated.results.map((r) => r.document_id)).not.toContain('other-tenant');
      const refused = await p.query.answer({ question: 'Who won the football world cup in 2010?' }, { tenant: 'default' });
      expect(refused.refused).toBe(true);
      expect(refused.citations).toEqual([]);
      const reranked = await p.query.retrieve({ question: 'panel flutter', rerank: true }, { tenant: 'default' });
      expect(reranked.degraded).toContain('reranker');
      await expect(p.query.retrieve({ question: 'x', filters: { tenant: 'b' } }, { tenant: 'default' })).rejects.toThrow(/reserved/);
    } finally {
      await p.close();
    }
  });
});
