import type { QueryTranslation } from '@rag/domain';

/**
 * Translates a question into the other script's language (Chinese ↔ English) for cross-lingual retrieval: the
 * question searches its own script as it is and the other script through the translation.
 */
export interface QueryTranslator {
  readonly id: string;
  /**
   * The translation, or undefined when nothing in the question translates — or when the translator is not ready yet
   * (a dictionary still loading): a question never waits for it, it is answered untranslated meanwhile.
   */
  translate(question: string): Promise<QueryTranslation | undefined>;
  /** Whether translations are available now. */
  readonly ready: boolean;
  /** Starts loading (if not started) and resolves once translations are available; rejects when loading failed. */
  whenReady(): Promise<void>;
}
export const QUERY_TRANSLATOR = Symbol('QUERY_TRANSLATOR');
