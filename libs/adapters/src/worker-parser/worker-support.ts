import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the piscina-backed adapters (the parse pool, the grounding pool, the keyword search workers) share: where a
 * worker module is, first-come first-served slots, and how an aborted task looks.
 */

/**
 * The worker module `<base>.js` in `dir` (built, dist/) or, from sources (vitest), `<base>.ts` run through ts-worker.cjs,
 * which compiles TypeScript in the worker with the build's own SWC settings (`tsEntry` goes into its workerData).
 * `file` overrides the module (tests' faulty workers). Throws naming `what` when the module is missing.
 */
export function workerEntry(dir: string, base: string, what: string, file?: string): { filename: string; tsEntry?: string } {
  const built = join(dir, `${base}.js`);
  const target = file ?? (existsSync(built) ? built : join(dir, `${base}.ts`));
  if (!existsSync(target)) throw new Error(`${what} module not found: ${target}`);
  return target.endsWith('.ts') ? { filename: join(__dirname, 'ts-worker.cjs'), tsEntry: target } : { filename: target };
}

/** First-come first-served slots, so a task's time limit starts when a worker takes it, not while it waits. */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(size: number) {
    this.free = size;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

export function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}
