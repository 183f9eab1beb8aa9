import { z } from 'zod';
import { Topic } from '../topics';
import { SourceEventSchema } from './source-event';
import { DocumentEventSchema } from './document-event';
import { ChunksEventSchema } from './chunks-event';
import { EmbeddedChunksEventSchema } from './embedded-chunks-event';
import { IndexEventSchema } from './index-event';

export * from './key';
export * from './source-event';
export * from './document-event';
export * from './chunks-event';
export * from './embedded-chunks-event';
export * from './index-event';

/** The value schema of every topic: a message that does not parse goes to the DLQ. */
export const TOPIC_SCHEMAS = {
  [Topic.SourceEvents]: SourceEventSchema,
  [Topic.Documents]: DocumentEventSchema,
  [Topic.Chunks]: ChunksEventSchema,
  [Topic.ChunksEmbedded]: EmbeddedChunksEventSchema,
  [Topic.IndexEvents]: IndexEventSchema,
  [Topic.Dlq]: z.unknown(),
} as const;

export type TopicValue<T extends Topic> = z.infer<(typeof TOPIC_SCHEMAS)[T]>;
