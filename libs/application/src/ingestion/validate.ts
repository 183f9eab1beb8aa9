import type { z } from 'zod';
import { NonRetryableError } from '@rag/ports';

/** Parses a message value at the edge of a stage: an invalid one goes straight to the DLQ with the reason. */
export function parseMessage<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    const problems = r.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new NonRetryableError(`invalid ${what}: ${problems}`);
  }
  return r.data;
}

export const nowIso = (): string => new Date().toISOString();
