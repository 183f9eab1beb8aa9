import type { QueryTranslation } from '@rag/domain';

/**
 * Translates a question into the other script's language (Chinese ↔ English) for cross-lingual retrieval: the
 * question searches its own script as it is and the other script through the translation.
 */
export interface QueryTranslator {
  readonly id: string;
  /** The translation, or undefined when nothing in the question translates. */
  translate(question: string): Promise<QueryTranslation | undefined>;
}
export const QUERY_TRANSLATOR = Symbol('QUERY_TRANSLATOR');
