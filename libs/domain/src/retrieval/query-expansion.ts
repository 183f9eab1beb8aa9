import type { PromptMessage } from '../generation/prompt';
import { normalizeQuery } from './normalize-query';

/** Prompt asking an LLM for alternative phrasings of a search query (multi-query expansion). */
export function buildExpansionPrompt(query: string, count: number): PromptMessage[] {
  return [
    {
      role: 'system',
      content:
        `You rewrite search queries for a document search engine. Write ${count} alternative phrasings of the user's query ` +
        'that keep its meaning but use different words (synonyms, expanded abbreviations, the technical term). ' +
        'Write them in the language of the query. Output one query per line, nothing else: no numbering, no quotes, no explanations.',
    },
    { role: 'user', content: query },
  ];
}

/** Prompt asking an LLM for a short hypothetical passage answering the question (HyDE). */
export function buildHydePrompt(question: string): PromptMessage[] {
  return [
    {
      role: 'system',
      content:
        'Write one short paragraph (at most 80 words) that could appear in a document answering the question. ' +
        'Write it in the language of the question, as factual prose, without saying that it is hypothetical.',
    },
    { role: 'user', content: question },
  ];
}

/**
 * Parses the expansion lines: strips numbering/bullets/quotes, drops empty lines and duplicates of the original
 * (after normalization), keeps at most `max`. The original query is always searched as well, by the caller.
 */
export function parseExpansions(text: string, original: string, max: number): string[] {
  const seen = new Set([normalizeQuery(original).toLowerCase()]);
  const out: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = normalizeQuery(
      raw
        .replace(/^\s*(?:[-*•]|\d+[.)、]|[（(]\d+[)）])\s*/u, '')
        .replace(/^["'“”「」]+|["'“”「」]+$/gu, ''),
    );
    if (!line || line.length > 500) continue;
    const key = line.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(line);
    if (out.length >= max) break;
  }
  return out;
}

/**
 * Prompt of the corrective retry (CRAG): the first search found no passage good enough, so ask for ONE better
 * search query — the corpus's likely wording, technical terms, expanded abbreviations.
 */
export function buildCorrectivePrompt(question: string): PromptMessage[] {
  return [
    {
      role: 'system',
      content:
        'A document search for the user question below found no passage that answers it. Rewrite it as ONE better search query: ' +
        'the words a document answering it would use (technical terms, expanded abbreviations, the key names), without question words. ' +
        'Write it in the language of the question. Output the query only, on one line: no quotes, no explanation.',
    },
    { role: 'user', content: question },
  ];
}

/** The corrective query from the LLM's reply: its first usable line (cleaned like an expansion), or undefined. */
export function parseCorrectiveQuery(text: string, original: string): string | undefined {
  return parseExpansions(text, original, 1)[0];
}
