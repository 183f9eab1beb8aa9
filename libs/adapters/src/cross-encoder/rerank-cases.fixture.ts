/** For specs only: a question and four candidates whose answering passage a cross-encoder should rank first. */
import type { ScoredChunk } from '@rag/contracts';

export function chunk(id: string, text: string, score = 0): ScoredChunk {
  return { chunk_id: `doc:${id}#v1#0`, document_id: `doc:${id}`, title: `Doc ${id}`, text, score, heading_path: ['H'], source_url: `https://x/${id}` };
}

export const QUERY = 'How do I reset my password?';
export const CANDIDATES = [
  chunk('revenue', 'Quarterly revenue grew by twelve percent compared with last year.', 0.9),
  chunk('rules', 'Password rules: use at least twelve characters.', 0.8),
  chunk('reset', 'To reset your password, open Settings, choose Security and click Reset password.', 0.7),
  chunk('lunch', 'The cafeteria serves lunch from noon until two.', 0.6),
];
