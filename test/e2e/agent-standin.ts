import { OpenAiChatStandIn, type ChatCall, type ChatReply } from '../fakes/openai-chat';

/** One chat-completions request as the stand-in received it. */
export interface ChatRequest {
  kind: 'plan' | 'rewrite' | 'answer' | 'other';
  system: string;
  user: string;
  stream: boolean;
}

/** A scripted reply: text (streamed when asked), or an HTTP error in the provider's error shape. */
export type Reply = ChatReply;

/**
 * The OpenAI wire stand-in (test/fakes/openai-chat) for the agent and CRAG suites. Each test sets `script`, which
 * reads the request (the system prompt tells the planner, the corrective rewrite and the answer apart) and returns
 * the reply, so that what the "model" writes depends on what the platform showed it, as with a real model.
 */
export class LlmStandIn extends OpenAiChatStandIn {
  readonly requests: ChatRequest[] = [];
  script: (r: ChatRequest) => Reply = () => '';

  of(kind: ChatRequest['kind']): ChatRequest[] {
    return this.requests.filter((r) => r.kind === kind);
  }

  reset(): void {
    this.requests.length = 0;
  }

  protected reply({ system, user, stream }: ChatCall): ChatReply {
    const kind: ChatRequest['kind'] = system.includes('You plan the retrieval steps')
      ? 'plan'
      : system.includes('ONE better search query')
        ? 'rewrite'
        : /\[1\]/.test(user)
          ? 'answer'
          : 'other';
    const r: ChatRequest = { kind, system, user, stream };
    this.requests.push(r);
    return this.script(r);
  }
}

/** The refs [n] of the answer prompt's sources whose text contains `needle`. */
export function refsContaining(user: string, needle: string): number[] {
  const refs: number[] = [];
  for (const m of user.matchAll(/<source id="(\d+)">([\s\S]*?)<\/source>/g)) if (m[2]!.includes(needle)) refs.push(Number(m[1]));
  return [...new Set(refs)];
}
