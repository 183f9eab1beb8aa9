import { z } from 'zod';
import { DocumentIdSchema } from '../common';

/** Every topic is keyed by document id so one document's events stay ordered. */
export const DocumentKeySchema = DocumentIdSchema;
export type DocumentKey = z.infer<typeof DocumentKeySchema>;
