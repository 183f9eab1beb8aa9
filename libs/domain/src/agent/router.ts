/**
 * The router of `mode: "auto"` (and RAG_AGENT=auto): a cheap look at the question's wording decides whether it goes
 * down the single-shot path (one retrieval, one answer: today's latency) or to the agent (several hops). Only
 * questions that read as multi-hop go to the agent:
 * - comparisons and conjunctions of two things ("compare A and B", "difference between", "both", "A or B", 比较/区别),
 * - a bridge: an entity described by another fact ("the author of the book that…", "the leader of the X project"),
 * - two questions in one ("…? and what…", two question marks, "and where/when/who…"),
 * - long questions (more than 30 words or 80 CJK characters), which usually pack several conditions.
 * Everything else — the bulk of search-box questions — is single-shot. A heuristic by design: it costs microseconds,
 * and a wrong "single" still gets the corrective retry when the evidence is weak.
 */
export type AgentRoute = { route: 'single' | 'agent'; reason: string };

const COMPARISON = /\b(?:compare[ds]?|comparison|comparing|differences?|differ(?:s|ent)?\s+from|versus|vs\.?|both|whereas|relative\s+to)\b/i;
const BRIDGE =
  /\b(?:the|a|an)\s+[\p{L}\p{N}-]+(?:\s+[\p{L}\p{N}-]+)?\s+(?:of|by|for|from|in|at)\s+(?:the|a|an)\s+[\p{L}\p{N}-]+(?:\s+[\p{L}\p{N}-]+)?\s+(?:that|who|which|whose|where)\b/iu;
/** A role of another entity ("the leader of the Zephyr project", "the author of…"): who it is must be found first. */
const ROLE_OF =
  /\b(?:the|its|his|her|their)\s+(?:leader|head|chief|author|writer|founder|director|creator|inventor|owner|designer|builder|manufacturer|manager|president|chair|chairman|ceo|capital|successor|predecessor|parent|mother|father|wife|husband|son|daughter|birthplace|hometown|employer|supervisor|advisor)\s+of\b/i;
const RELATIVE_CHAIN = /\b(?:who|whose|which|that)\b[^?]*\b(?:who|whose|which|that)\b/i;
/** "Which … that …" asks one thing: the question's own first word is not a relative pronoun. */
const LEADING_INTERROGATIVE = /^\s*(?:which|who|whose)\b/i;
const TWO_QUESTIONS = /\b(?:and|also)\s+(?:what|who|whom|where|when|which|why|how)\b|\?\s*\S[^?]*\?/i;
const CJK_MULTI = /比较|区别|不同之处|异同|分别|两者|以及.*(?:什么|哪|谁|何)|(?:什么|哪|谁).*(?:什么|哪|谁)/u;
const CJK = /[\u3400-\u9fff\uf900-\ufaff]/gu;

export function routeQuestion(question: string): AgentRoute {
  const q = question.trim();
  if (COMPARISON.test(q)) return { route: 'agent', reason: 'comparison' };
  if (BRIDGE.test(q) || ROLE_OF.test(q) || RELATIVE_CHAIN.test(q.replace(LEADING_INTERROGATIVE, ''))) return { route: 'agent', reason: 'bridge' };
  if (TWO_QUESTIONS.test(q)) return { route: 'agent', reason: 'two questions' };
  if (CJK_MULTI.test(q)) return { route: 'agent', reason: 'comparison' };
  const cjk = q.match(CJK)?.length ?? 0;
  const words = q.replace(CJK, ' ').split(/\s+/).filter(Boolean).length;
  if (words > 30 || cjk > 80) return { route: 'agent', reason: 'long' };
  return { route: 'single', reason: 'simple' };
}
