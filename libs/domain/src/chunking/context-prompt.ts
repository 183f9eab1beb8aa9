import type { Chunk } from '@rag/contracts';
import { forEachTokenUnit } from './tokens';

/**
 * Contextual retrieval (Anthropic, "Introducing Contextual Retrieval", 2024): an LLM writes a short context that
 * situates each chunk in its whole document; the context is prepended to the chunk for embedding and BM25.
 *
 * The prompt puts the document first and the chunk last, so every chunk of a document shares one long identical
 * prefix: node-llama-cpp keeps the evaluated prefix of a sequence in its KV cache and only evaluates the new tail,
 * and OpenAI-compatible servers cache prompt prefixes (vLLM prefix caching, OpenAI prompt caching past 1024 tokens),
 * so a document costs about one prompt rather than one per chunk.
 */

export interface ContextMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/**
 * The document text the LLM sees: the parents' texts in order when the document has parents (they cover the
 * document without the children's overlaps), else the children's; cut to `maxTokens` (the head is kept). Built from
 * chunks so that ingestion and the re-index of stored chunks give the LLM the same text.
 */
export function contextDocumentText(chunks: readonly Pick<Chunk, 'kind' | 'ordinal' | 'text'>[], maxTokens: number): string {
  const parents = chunks.filter((c) => c.kind === 'parent');
  const parts = (parents.length > 0 ? parents : chunks).slice().sort((a, b) => a.ordinal - b.ordinal);
  return cutToTokens(parts.map((c) => c.text.trim()).filter((t) => t.length > 0).join('\n\n'), maxTokens);
}

/** The head of `text` of at most `maxTokens` tokens (cut between counting units), with `…` when cut. */
export function cutToTokens(text: string, maxTokens: number): string {
  let used = 0;
  let end = text.length;
  let cut = false;
  forEachTokenUnit(text, (_start, unitEnd, tokens) => {
    if (cut) return;
    if (used + tokens > maxTokens) {
      cut = true;
      return;
    }
    used += tokens;
    end = unitEnd;
  });
  return cut ? `${text.slice(0, end).trimEnd()} …` : text;
}

/** The messages for one chunk: the document (the shared prefix) first, then the chunk and the instruction. */
export function contextPrompt(title: string, documentText: string, chunkText: string): ContextMessage[] {
  const head = title.trim() ? `<document title="${title.replace(/"/g, "'").trim()}">` : '<document>';
  return [
    {
      role: 'user',
      content:
        `${head}\n${documentText}\n</document>\n` +
        `Here is the chunk we want to situate within the whole document\n<chunk>\n${chunkText}\n</chunk>\n` +
        'Please give a short succinct context (one or two sentences) to situate this chunk within the overall document ' +
        'for the purposes of improving search retrieval of the chunk. Answer only with the succinct context and nothing else.',
    },
  ];
}

/** Longest context kept, in characters (two sentences of normal prose fit easily). */
export const MAX_CONTEXT_CHARS = 600;

/**
 * The context to store from the model's raw output: markup and a leading "Context:" label dropped, whitespace
 * collapsed, at most two sentences and {@link MAX_CONTEXT_CHARS} characters; `null` when nothing usable is left (the
 * chunk then stays without context). A model that echoes the chunk (a base model often does) gets `null` too: the
 * text is already indexed.
 */
export function cleanContext(raw: string, chunkText: string): string | null {
  let t = raw
    .replace(/<\/?(?:document|chunk|context)[^>]*>/gi, ' ')
    .replace(/```[a-z]*|```/gi, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^(?:(?:succinct|short)\s+)?context\s*[:：-]\s*/i, '')
    .replace(/^["'“”]+|["'“”]+$/g, '')
    .trim();
  if (!t) return null;
  const sentences = t.match(/[^.!?。！？]+(?:[.!?。！？]+|$)/g) ?? [t];
  t = sentences.slice(0, 2).join('').trim();
  if (t.length > MAX_CONTEXT_CHARS) t = `${Array.from(t).slice(0, MAX_CONTEXT_CHARS - 1).join('').trimEnd()}…`;
  if (!/[\p{L}\p{N}]/u.test(t)) return null;
  const norm = (s: string): string => s.replace(/\s+/g, ' ').trim().toLowerCase();
  if (norm(chunkText).startsWith(norm(t).replace(/…$/, ''))) return null;
  return t;
}
