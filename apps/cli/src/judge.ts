import {
  answerRelevancyScore,
  faithfulnessScore,
  GENERATED_QUESTIONS,
  meanOf,
  parseGeneratedQuestions,
  parseStatements,
  parseVerdicts,
  QUESTIONS_SCHEMA,
  questionsPrompt,
  STATEMENTS_SCHEMA,
  statementsPrompt,
  VERDICTS_SCHEMA,
  verdictsPrompt,
  type JudgeMessage,
} from '@rag/domain';
import type { QueryAnswer } from '@rag/contracts';
import type { AppConfig } from '@rag/platform';
import { EMBEDDER, LLM, type Embedder, type JsonSchema, type Llm } from '@rag/ports';
import type { EmbeddedHandles } from '@rag/services';

/** One answer's judgement; a metric is null when the judge's output could not be used (counted in `*_unjudged`). */
export interface AnswerJudgement {
  faithfulness: number | null;
  answer_relevancy: number | null;
  statements: number;
}

export interface JudgeOptions {
  /** Completion tokens of one judge call (default 512). */
  maxTokens?: number;
  /** Retrieved passages given as the context (default 5: the generator's RAG_TOP_K). */
  contexts?: number;
}

/**
 * `rag eval --judge` (issue 16 item 6): faithfulness and answer relevancy of each answer, judged by the configured
 * LLM (any OpenAI-compatible endpoint, or RAG_LLM=local), per the RAGAS definitions (scoring and prompts in
 * libs/domain eval/judge.ts). Output is constrained to the JSON schema where the adapter can (`generateJson`: the
 * local model's grammar), else parsed tolerantly from the text; an unusable output leaves that metric null for that
 * answer. Refused answers are not judged (nothing was claimed); they are counted.
 *
 * With Gemma 3 270M (a base model) this runs the mechanics only: its verdicts are not a quality measurement.
 */
export class AnswerJudge {
  private readonly faith: (number | null)[] = [];
  private readonly relevancy: (number | null)[] = [];
  private refused = 0;
  private failedCalls = 0;

  constructor(
    private readonly llm: Llm,
    private readonly embedder: Embedder,
    private readonly options: JudgeOptions = {},
  ) {}

  /** Judges one answer of the eval's answer pass; `retrieved` are the retrieval results of the same question, best first. */
  async add(question: string, answer: QueryAnswer, retrieved: readonly { text: string }[]): Promise<AnswerJudgement | null> {
    if (answer.refused || !answer.answer.trim()) {
      this.refused++;
      return null;
    }
    const contexts = retrieved.slice(0, this.options.contexts ?? 5).map((r) => r.text);
    const j = await this.judge(question, answer.answer, contexts);
    this.faith.push(j.faithfulness);
    this.relevancy.push(j.answer_relevancy);
    return j;
  }

  async judge(question: string, answer: string, contexts: readonly string[]): Promise<AnswerJudgement> {
    const [faith, relevancy] = [await this.faithfulness(question, answer, contexts), await this.answerRelevancy(question, answer)];
    return { faithfulness: faith.score, answer_relevancy: relevancy, statements: faith.statements };
  }

  /** The report's fields, beside the retrieval metrics. */
  report(): Record<string, unknown> {
    const round = (x: number | null) => (x === null ? null : Math.round(x * 10000) / 10000);
    return {
      judge_model: this.llm.id,
      judged_answers: this.faith.length,
      judge_skipped_refused: this.refused,
      faithfulness: round(meanOf(this.faith)),
      faithfulness_unjudged: this.faith.filter((x) => x === null).length,
      answer_relevancy: round(meanOf(this.relevancy)),
      answer_relevancy_unjudged: this.relevancy.filter((x) => x === null).length,
      judge_failed_calls: this.failedCalls,
    };
  }

  private async faithfulness(question: string, answer: string, contexts: readonly string[]): Promise<{ score: number | null; statements: number }> {
    const statements = parseStatements(await this.ask(statementsPrompt(question, answer), STATEMENTS_SCHEMA));
    if (!statements || statements.length === 0) return { score: null, statements: 0 };
    const context = contexts.map((c, i) => `[${i + 1}] ${c}`).join('\n\n');
    const verdicts = parseVerdicts(await this.ask(verdictsPrompt(context, statements), VERDICTS_SCHEMA), statements.length);
    return { score: verdicts ? faithfulnessScore(verdicts) : null, statements: statements.length };
  }

  private async answerRelevancy(question: string, answer: string): Promise<number | null> {
    const generated = parseGeneratedQuestions(await this.ask(questionsPrompt(answer, GENERATED_QUESTIONS), QUESTIONS_SCHEMA));
    if (!generated) return null;
    if (generated.noncommittal) return 0;
    const questions = generated.questions.slice(0, GENERATED_QUESTIONS);
    if (questions.length === 0) return null;
    const [q, ...g] = await this.embedder.embed([question, ...questions], 'query');
    return answerRelevancyScore(q!, g, false);
  }

  /** The parsed JSON value (schema-constrained when the adapter can), the raw text otherwise; null when the call failed. */
  private async ask(messages: JudgeMessage[], schema: JsonSchema): Promise<unknown> {
    const opts = { maxTokens: this.options.maxTokens ?? 512, temperature: 0 };
    try {
      if (this.llm.generateJson) return (await this.llm.generateJson(messages, schema, opts)).value;
      return (await this.llm.complete(messages, opts)).text;
    } catch {
      this.failedCalls++;
      return null;
    }
  }
}

/** The judge of `rag eval --judge` over the embedded platform's own LLM and embedder; refuses without either. */
export function judgeFor(handles: EmbeddedHandles, config: AppConfig, answers: boolean): AnswerJudge {
  if (!answers) throw new Error('--judge judges the answer pass: drop --no-answers');
  const llm = handles.context.get<Llm | null>(LLM, { strict: false });
  if (!llm || config.RAG_LLM === 'none') throw new Error('--judge needs an LLM: set RAG_LLM=openai (with RAG_LLM_BASE_URL) or RAG_LLM=local');
  return new AnswerJudge(llm, handles.context.get<Embedder>(EMBEDDER, { strict: false }), { contexts: config.RAG_TOP_K });
}
