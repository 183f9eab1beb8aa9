import { testChunkOf, type Chunk, type SearchScope } from '@rag/contracts';
import type { KeywordSearchRequest } from '@rag/ports';

/**
 * A small keyword corpus and the searches that exercise it (tenant, ACL scope, metadata filter, Chinese, stop words
 * only), shared by the specs that compare an embedded keyword index's wrappers (search workers, the writer thread)
 * with the index itself.
 */
export const keywordScope: SearchScope = { tenant: 't1' };

/** A chunk of tenant t1 (version 1 unless given). */
export const keywordChunk = (doc: string, ordinal: number, text: string, extra: Partial<Chunk> = {}, version = 1): Chunk =>
  testChunkOf(doc, version, ordinal, { tenant: 't1', text, token_count: text.length, ...extra });

export const keywordCorpus: Chunk[] = [
  keywordChunk('wing', 0, 'The wing root carries the bending load of the wing.'),
  keywordChunk('wing', 1, 'Spars take the shear load; ribs keep the wing section.', { acl: ['group:eng'] }),
  keywordChunk('shock', 0, 'Shock tubes measure test times behind the reflected shock.'),
  keywordChunk('heat', 0, 'Aeroelastic models of heated aircraft must obey similarity laws.', { metadata: { team: 'thermal' } }),
  keywordChunk('zh', 0, '北京是中国的首都，也是政治中心。'),
  testChunkOf('other', 1, 0, { tenant: 't2', text: 'The wing of another tenant.' }),
];

export const keywordRequests: KeywordSearchRequest[] = [
  { query: 'wing load', k: 10, scope: keywordScope },
  { query: 'wing load', k: 10, scope: { tenant: 't1', principals: ['group:ops'] } },
  { query: 'shock tube test time', k: 2, scope: keywordScope },
  { query: 'heated aircraft similarity', k: 5, scope: keywordScope, filters: { team: 'thermal' } },
  { query: '首都', k: 3, scope: keywordScope },
  { query: 'the of', k: 3, scope: keywordScope },
];
