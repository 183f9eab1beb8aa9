/**
 * One LLM call's abort wiring, shared by the OpenAI-compatible and the local adapter: the caller's signal and our
 * timeout both abort one controller; `arm()` (re)starts the timeout, `disarm()` stops it (while the consumer of a
 * stream holds a piece, the model is not the one keeping us waiting). Each adapter maps what was thrown to its own
 * errors with `timedOut` / `callerAborted`.
 */
export class CallDeadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** True once our timeout (not the caller) aborted the call. */
  timedOut = false;
  private readonly onCallerAbort = () => this.controller.abort(this.caller?.reason);

  constructor(
    readonly ms: number,
    private readonly caller: AbortSignal | undefined,
  ) {
    if (caller?.aborted) this.controller.abort(caller.reason);
    else caller?.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Whether the caller gave up (its reason is what the caller should see). */
  get callerAborted(): boolean {
    return this.caller?.aborted === true;
  }

  get callerReason(): unknown {
    return this.caller?.reason;
  }

  arm(): void {
    this.disarm();
    if (this.controller.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(new Error('timeout'));
    }, this.ms);
  }

  disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  dispose(): void {
    this.disarm();
    this.caller?.removeEventListener('abort', this.onCallerAbort);
  }
}
