import { z } from 'zod';

/**
 * Confluence webhook payloads (Confluence webhooks: `page_created`, `page_updated`, `page_removed`, `page_trashed`,
 * `page_restored`), signed with `X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body>` when a secret is set.
 * `timestamp` is the event time in epoch milliseconds; `page.id` is numeric in older payloads and a string in newer.
 * Unknown fields are allowed (the source adds fields over time); the fields we act on are required.
 */
export const ConfluenceWebhookEventTypeSchema = z.enum([
  'page_created',
  'page_updated',
  'page_removed',
  'page_trashed',
  'page_restored',
  /** Restrictions (who may read) changed; the page's version does not change, so only this event tells. */
  'content_permissions_updated',
]);
export type ConfluenceWebhookEventType = z.infer<typeof ConfluenceWebhookEventTypeSchema>;

const PageIdSchema = z.union([z.string().regex(/^\d{1,20}$/, 'page id must be numeric'), z.number().int().nonnegative()]).transform((v) => String(v));

export const ConfluenceWebhookPageSchema = z
  .object({
    id: PageIdSchema,
    title: z.string().max(1024).optional(),
    spaceKey: z.string().max(255).optional(),
    version: z.number().int().nonnegative().optional(),
    contentType: z.string().optional(),
    creationDate: z.number().optional(),
    modificationDate: z.number().optional(),
    self: z.string().max(2048).optional(),
  })
  .loose();

export const ConfluenceWebhookSchema = z
  .object({
    /** Data Center and REST-registered webhooks name the event in the body; otherwise the endpoint's `?event=` does. */
    event: ConfluenceWebhookEventTypeSchema.optional(),
    webhookEvent: ConfluenceWebhookEventTypeSchema.optional(),
    /** Event time, epoch milliseconds. */
    timestamp: z.number().int().positive(),
    userAccountId: z.string().optional(),
    updateTrigger: z.string().optional(),
    page: ConfluenceWebhookPageSchema.optional(),
    /** `content_permissions_updated` names the page as `content` (page events name it `page`). */
    content: ConfluenceWebhookPageSchema.optional(),
  })
  .loose()
  .refine((w) => w.page !== undefined || w.content !== undefined, { message: 'the payload names no page (`page` or `content`)', path: ['page'] });
export type ConfluenceWebhook = z.infer<typeof ConfluenceWebhookSchema>;

/* Confluence Cloud REST API v2 responses (the fields the connector reads). */

export const ConfluenceVersionSchema = z.object({ number: z.number().int().nonnegative(), createdAt: z.string().optional() }).loose();

export const ConfluencePageSchema = z
  .object({
    id: z.string(),
    status: z.string(),
    title: z.string(),
    spaceId: z.string().optional(),
    parentId: z.string().nullable().optional(),
    version: ConfluenceVersionSchema.optional(),
    body: z.object({ storage: z.object({ value: z.string(), representation: z.string().optional() }).loose().optional() }).loose().optional(),
    _links: z.object({ webui: z.string().optional(), base: z.string().optional() }).loose().optional(),
  })
  .loose();
export type ConfluencePage = z.infer<typeof ConfluencePageSchema>;

/** `GET /wiki/api/v2/spaces/{id}/pages` and `GET /wiki/api/v2/spaces`: cursor pagination via `_links.next`. */
export const ConfluencePageListSchema = z
  .object({
    results: z.array(ConfluencePageSchema.omit({ body: true })),
    _links: z.object({ next: z.string().optional(), base: z.string().optional() }).loose().optional(),
  })
  .loose();

export const ConfluenceSpaceListSchema = z
  .object({
    results: z.array(z.object({ id: z.string(), key: z.string(), name: z.string().optional() }).loose()),
    _links: z.object({ next: z.string().optional() }).loose().optional(),
  })
  .loose();

/** `GET /wiki/rest/api/content/{id}/restriction/byOperation/read` */
export const ConfluenceReadRestrictionSchema = z
  .object({
    operation: z.string().optional(),
    restrictions: z
      .object({
        user: z.object({ results: z.array(z.object({ accountId: z.string() }).loose()) }).loose().optional(),
        group: z.object({ results: z.array(z.object({ name: z.string(), id: z.string().optional() }).loose()) }).loose().optional(),
      })
      .loose(),
  })
  .loose();
export type ConfluenceReadRestriction = z.infer<typeof ConfluenceReadRestrictionSchema>;
