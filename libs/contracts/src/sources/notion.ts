import { z } from 'zod';

/**
 * Notion webhook payloads. The one-time verification request carries only `verification_token` (unsigned); every
 * event after it is signed with `X-Notion-Signature: sha256=<hex HMAC-SHA256 of the raw body keyed by that token>`.
 * Events carry a unique `id`, an ISO 8601 `timestamp` (usable for ordering), `type` and the `entity` that changed.
 */
export const NotionVerificationSchema = z.object({ verification_token: z.string().min(1).max(1024) }).strict();

const NotionIdSchema = z
  .string()
  .regex(/^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i, 'must be a Notion id (UUID)');

export const NotionWebhookEventSchema = z
  .object({
    id: z.string().min(1).max(256),
    timestamp: z.iso.datetime({ offset: true }),
    workspace_id: z.string().optional(),
    workspace_name: z.string().optional(),
    subscription_id: z.string().optional(),
    integration_id: z.string().optional(),
    type: z.string().min(1).max(128),
    authors: z.array(z.object({ id: z.string(), type: z.string() }).loose()).optional(),
    accessible_by: z.array(z.object({ id: z.string(), type: z.string() }).loose()).optional(),
    attempt_number: z.number().int().optional(),
    entity: z.object({ id: NotionIdSchema, type: z.string() }).loose(),
    data: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();
export type NotionWebhookEvent = z.infer<typeof NotionWebhookEventSchema>;

/* Notion REST API responses (Notion-Version 2022-06-28; the fields the connector reads). */

export const NotionPageSchema = z
  .object({
    object: z.literal('page'),
    id: z.string(),
    last_edited_time: z.string(),
    archived: z.boolean().optional(),
    in_trash: z.boolean().optional(),
    url: z.string().optional(),
    properties: z.record(z.string(), z.object({ type: z.string() }).loose()).default({}),
  })
  .loose();
export type NotionPage = z.infer<typeof NotionPageSchema>;

export const NotionBlockSchema = z
  .object({
    object: z.literal('block'),
    id: z.string(),
    type: z.string(),
    has_children: z.boolean().default(false),
    archived: z.boolean().optional(),
    in_trash: z.boolean().optional(),
  })
  .catchall(z.unknown());
export type NotionBlock = z.infer<typeof NotionBlockSchema>;

/** A block with its children fetched (tables, toggles, nested list items, columns). */
export type NotionBlockNode = NotionBlock & { children?: NotionBlockNode[] };

/** Paginated list: `GET /v1/blocks/{id}/children`, `POST /v1/search` (`start_cursor`, `has_more`, `next_cursor`). */
export const notionListSchema = <T extends z.ZodType>(item: T) =>
  z
    .object({
      object: z.literal('list'),
      results: z.array(item),
      has_more: z.boolean(),
      next_cursor: z.string().nullable(),
    })
    .loose();
