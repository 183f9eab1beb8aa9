import type { StoreCounts } from '@rag/ports';
import { assessCounts } from './store-integrity';

const counts = (c: Partial<StoreCounts>): StoreCounts => ({
  registryDocuments: 10,
  registryIndexedChunks: 1000,
  registryPendingDocuments: 0,
  keywordChunks: 1000,
  vectorRecords: 1000,
  files: { registry: '/d/registry.db', keyword: '/d/keyword.db', vectors: '/d/vectors/m-4/vectors.db' },
  ...c,
});

describe('assessCounts', () => {
  it('an empty registry beside a populated index is a problem naming both files and the override', () => {
    const r = assessCounts(counts({ registryDocuments: 0, registryIndexedChunks: 0, keywordChunks: 12, vectorRecords: 0 }), false);
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]!.message).toMatch(/^\/d\/registry\.db holds no documents, but \/d\/keyword\.db holds 12 chunks: .*RAG_ALLOW_EMPTY_REGISTRY=true/);
  });

  it('allowed deliberately, it is a warning', () => {
    const r = assessCounts(counts({ registryDocuments: 0, registryIndexedChunks: 0, vectorRecords: 5 }), true);
    expect(r.problems).toEqual([]);
    expect(r.warnings[0]).toMatch(/allowed by RAG_ALLOW_EMPTY_REGISTRY/);
  });

  it('an empty registry beside empty indexes (a new data folder) is fine', () => {
    expect(assessCounts(counts({ registryDocuments: 0, registryIndexedChunks: 0, keywordChunks: 0, vectorRecords: 0 }), false)).toEqual({ problems: [], warnings: [] });
  });

  it('tolerates what documents in flight explain, warns beyond, fails when grossly off', () => {
    expect(assessCounts(counts({ keywordChunks: 1100, vectorRecords: 960 }), false)).toEqual({ problems: [], warnings: [] });
    const warn = assessCounts(counts({ keywordChunks: 1200 }), false);
    expect(warn.problems).toEqual([]);
    expect(warn.warnings[0]).toMatch(/^\/d\/keyword\.db holds 1200 chunks where the registry counts 1000 indexed chunks \(\+200\)/);
    const gross = assessCounts(counts({ vectorRecords: 300 }), false);
    expect(gross.problems[0]!.message).toMatch(/vectors\.db holds 300 vectors where the registry counts 1000 .*disagree grossly/);
    // small corpora: a difference under 100 chunks is never gross
    expect(assessCounts(counts({ registryIndexedChunks: 20, keywordChunks: 90, vectorRecords: 20 }), false).problems).toEqual([]);
  });

  it('stores holding more than the registry records while documents are queued or being indexed: a warning, not a refusal (a crash early in a bulk ingestion)', () => {
    // the state a SIGKILL left early in a first ingestion: a batch of documents' vectors written, 4 chunks recorded
    const early = { registryDocuments: 600, registryIndexedChunks: 4, keywordChunks: 4, vectorRecords: 164 };
    const refused = assessCounts(counts({ ...early, registryPendingDocuments: 0 }), false);
    expect(refused.problems[0]!.message).toMatch(/holds 164 vectors where the registry counts 4 indexed chunks \(\+160\).*disagree grossly/);
    const inFlight = assessCounts(counts({ ...early, registryPendingDocuments: 596 }), false);
    expect(inFlight.problems).toEqual([]);
    expect(inFlight.warnings).toEqual([expect.stringMatching(/holds 164 vectors where the registry counts 4 indexed chunks \(\+160\): 596 documents are queued or being indexed/)]);
    // documents in flight never explain a store holding fewer chunks than the registry records: still refused
    expect(assessCounts(counts({ vectorRecords: 300, registryPendingDocuments: 50 }), false).problems[0]!.message).toMatch(/disagree grossly/);
    // an unknown pending count (a damaged registry gives null counts) changes nothing
    expect(assessCounts(counts({ ...early, registryPendingDocuments: null }), false).problems).toHaveLength(1);
  });
});
