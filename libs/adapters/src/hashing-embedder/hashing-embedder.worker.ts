/**
 * The hashing-embedder worker (a piscina task module): hashes a batch of passages off the calling thread and returns
 * their vectors packed into one Float32Array (row after row), transferred rather than copied.
 */
import { Piscina } from 'piscina';
import { HashingEmbedder, type HashingEmbedderOptions } from './hashing-embedder.adapter';

export interface HashingTask {
  options: HashingEmbedderOptions;
  texts: string[];
}

/** Why `task` is not a hashing task, or undefined: checked before posting and again at the worker's edge. */
export function hashingTaskProblem(task: unknown): string | undefined {
  if (typeof task !== 'object' || task === null) return 'not an object';
  const { options, texts } = task as Partial<HashingTask>;
  if (typeof options !== 'object' || options === null) return 'options must be an object';
  if (!Array.isArray(texts)) return 'texts must be an array';
  if (texts.some((t) => typeof t !== 'string')) return 'every text must be a string';
  return undefined;
}

const embedders = new Map<string, HashingEmbedder>();

export default function hashTask(task: unknown): unknown {
  const problem = hashingTaskProblem(task);
  if (problem) throw new TypeError(`invalid hashing task: ${problem}`);
  const { options, texts } = task as HashingTask;
  const key = JSON.stringify(options);
  let embedder = embedders.get(key);
  if (!embedder) embedders.set(key, (embedder = new HashingEmbedder(options)));
  const packed = new Float32Array(texts.length * embedder.dim);
  texts.forEach((t, i) => packed.set(embedder.embedOne(t), i * embedder.dim));
  return Piscina.move(packed);
}
