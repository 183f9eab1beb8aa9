import { z } from 'zod';
import {
  ApiKeyCreateSchema,
  DocumentInputSchema,
  DocumentStatusSchema,
  FeedbackInputSchema,
  FilterConditionSchema,
  FiltersSchema,
  GroupNameSchema,
  LIMITS,
  QueryInputSchema,
  RetrieveInputSchema,
  StatementSchema,
} from '@rag/contracts';
import { MultipartFieldsSchema } from './documents.controller';

type JsonSchema = Record<string, unknown>;

/** A string with at least one non-whitespace character (zod `.trim().min(1)` and the `text is empty` refinement). */
const NOT_BLANK = '\\S';

/**
 * What the zod refinements check and JSON Schema cannot be told by `z.toJSONSchema` (it drops refinements): each
 * entry adds the equivalent JSON Schema keywords to the schema generated for that zod schema, so a body the schema
 * allows is a body the server accepts (openapi.spec.ts checks samples of both with ajv against zod).
 */
const REFINEMENTS = new Map<z.core.$ZodType, (s: JsonSchema) => void>([
  [
    DocumentInputSchema,
    (s) => {
      // Exactly one of text or content_base64.
      s.oneOf = [
        { required: ['text'], not: { required: ['content_base64'] } },
        { required: ['content_base64'], not: { required: ['text'] } },
      ];
      const props = s.properties as Record<string, JsonSchema>;
      props.text!.pattern = NOT_BLANK;
      // The service refuses a body that decodes to no bytes ("the document is empty"): at least two base64 characters.
      props.content_base64!.allOf = [{ pattern: '[A-Za-z0-9+/][^A-Za-z0-9+/]*[A-Za-z0-9+/]' }];
    },
  ],
  [QueryInputSchema.shape.question, (s) => void (s.pattern = NOT_BLANK)],
  [RetrieveInputSchema.shape.query, (s) => void (s.pattern = NOT_BLANK)],
  [
    FiltersSchema,
    (s) => {
      s.maxProperties = 32;
      // The query controller refuses a `__proto__` key (zod would drop it silently).
      (s.propertyNames as JsonSchema).not = { const: '__proto__' };
    },
  ],
  [FilterConditionSchema.options[4], (s) => void (s.minProperties = 1)],
  [GroupNameSchema, (s) => void (s.pattern = '^\\S([\\s\\S]*\\S)?$')],
  [
    ApiKeyCreateSchema,
    // An unrestricted key must not also have groups.
    (s) => void (s.not = { required: ['unrestricted', 'groups'], properties: { unrestricted: { const: true }, groups: { minItems: 1 } } }),
  ],
]);

/** The JSON Schema of a request body: what the zod schema accepts (`io: 'input'`), refinements included. */
export const jsonSchemaOf = (s: z.ZodType): JsonSchema => {
  const out = z.toJSONSchema(s, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => REFINEMENTS.get(ctx.zodSchema)?.(ctx.jsonSchema as JsonSchema),
  }) as JsonSchema;
  delete out.$schema;
  return out;
};

const json = (s: object) => ({ 'application/json': { schema: s } });
const errorBody = {
  type: 'object',
  properties: { error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} }, required: ['code', 'message'] } },
  required: ['error'],
};
const error = (description: string) => ({ description, content: json(errorBody) });
/** Every route that needs an API key can answer these. */
const authErrors = {
  '401': {
    ...error('missing or invalid API key (or forwarded JWT: bad signature, no `exp`, expired, lifetime over RAG_JWT_MAX_LIFETIME_S)'),
    headers: { 'WWW-Authenticate': { schema: { type: 'string' } } },
  },
  '403': error(
    'the API key lacks the scope of this route, the JWT names another tenant, or (anonymous local mode) the request could come from a web page: foreign Host, cross-origin Origin, or a form/multipart/text body without a key',
  ),
  '429': { ...error('rate limit of the API key exceeded'), headers: { 'Retry-After': { description: 'seconds', schema: { type: 'integer' } } } },
};
/** Routes with a request body. */
const bodyErrors = { '400': error('invalid request'), '413': error('body over the limit'), ...authErrors };
/** A document id as callers send it (the JSON body's `id`). */
const idParam = { name: 'id', in: 'path', required: true, schema: jsonSchemaOf(DocumentInputSchema.shape.id.unwrap()) };

/** Multipart upload: the same field schemas as the JSON body (metadata and acl as JSON text) and the file. */
function multipartSchema(): JsonSchema {
  const s = jsonSchemaOf(MultipartFieldsSchema);
  const props = s.properties as Record<string, JsonSchema>;
  props.metadata = { type: 'string', contentMediaType: 'application/json', description: 'JSON object: metadata values are string, number, boolean or string[]' };
  props.acl = { type: 'string', contentMediaType: 'application/json', description: 'JSON array of ACL entries (`*`, `group:<g>`, `user:<id>`)' };
  return { ...s, properties: { file: { type: 'string', format: 'binary' }, ...props }, required: ['file'] };
}

/** The OpenAPI 3.1 document served at /docs, built from the same zod schemas that validate requests. */
export function buildOpenApi(version: string) {
  return {
    openapi: '3.1.0',
    info: {
      title: 'RAG platform API',
      version,
      description: 'Ingest documents, ask questions, get answers that cite their sources (or refuse).',
    },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
    paths: {
      '/v1/documents': {
        post: {
          summary: 'Add or replace a document (JSON or multipart `file`)',
          requestBody: { required: true, content: { ...json(jsonSchemaOf(DocumentInputSchema)), 'multipart/form-data': { schema: multipartSchema() } } },
          responses: {
            '202': { description: 'queued' },
            '409': error('the id belongs to a document of another tenant'),
            '415': error('unsupported document type'),
            ...bodyErrors,
          },
        },
        get: {
          summary: 'List documents',
          parameters: [
            { name: 'status', in: 'query', schema: jsonSchemaOf(DocumentStatusSchema) },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
            {
              name: 'cursor',
              in: 'query',
              description: 'next_cursor of the previous page: the next page, at the same cost at any depth (not with offset)',
              schema: { type: 'string' },
            },
            {
              name: 'offset',
              in: 'query',
              description: 'rows to skip (compatibility; costs grow with the offset: prefer cursor for deep pages)',
              schema: { type: 'integer', minimum: 0, default: 0 },
            },
          ],
          responses: {
            '200': {
              description:
                '{documents, counts by status, next_cursor}: most recently updated first; next_cursor is null after the last page ' +
                '(a document that changes while you page moves to the front and is not repeated)',
            },
            '400': error('invalid query parameter (an unknown cursor, cursor with offset)'),
            ...authErrors,
          },
        },
      },
      '/v1/documents:batch': {
        post: {
          summary: `Add many documents (up to ${LIMITS.maxBatchDocuments}); each is accepted or rejected on its own`,
          requestBody: {
            required: true,
            content: json({
              type: 'object',
              properties: { documents: { type: 'array', minItems: 1, maxItems: LIMITS.maxBatchDocuments, items: jsonSchemaOf(DocumentInputSchema) } },
              required: ['documents'],
              additionalProperties: false,
            }),
          },
          responses: { '202': { description: '{accepted, rejected}' }, ...bodyErrors },
        },
      },
      '/v1/documents/{id}': {
        parameters: [idParam],
        get: { summary: 'Document status', responses: { '200': { description: 'status' }, '404': error('not found'), ...authErrors } },
        delete: { summary: 'Delete a document from every store', responses: { '202': { description: 'queued' }, '404': error('not found'), ...authErrors } },
      },
      '/v1/documents/{id}/chunks': {
        parameters: [idParam],
        get: {
          summary: 'The chunks of the document’s active version, in ordinal order (parent/child, heading path, text), paged; the embedded platform serves it (a gateway without the stores answers 503)',
          parameters: [
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
            { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, maximum: 1000000, default: 0 } },
          ],
          responses: {
            '200': { description: '{document_id, status, version, active_version, total, offset, chunks: [{chunk_id, ordinal, kind, parent_id, heading_path, title, text, token_count, source_url?}]}' },
            '400': error('invalid query parameter'),
            '404': error('not found'),
            '503': error('no keyword index in this gateway process'),
            ...authErrors,
          },
        },
      },
      '/v1/query': {
        post: {
          summary: 'Answer a question with citations (stream:true for server-sent events)',
          requestBody: { required: true, content: json(jsonSchemaOf(QueryInputSchema)) },
          responses: {
            '200': {
              description:
                '{answer, refused, citations: [{ref, document_id, chunk_id, title, text, score, source_url?, heading_path?}], statements: [{text, source_ids, support, supported}], degraded, timings_ms, trace_id}; statements: the answer’s claims, source_ids = the citations’ refs, support in [0, 1] by the verifier (RAG_VERIFY=mark|drop|refuse). With stream:true: `delta` events, then a `done` event carrying this object (the verification included).',
              content: json({
                type: 'object',
                required: ['answer', 'refused', 'citations', 'statements', 'degraded', 'timings_ms', 'trace_id'],
                properties: {
                  answer: { type: 'string' },
                  refused: { type: 'boolean' },
                  citations: { type: 'array', items: { type: 'object' } },
                  statements: { type: 'array', items: jsonSchemaOf(StatementSchema) },
                  degraded: { type: 'array', items: { type: 'string' } },
                  timings_ms: { type: 'object', additionalProperties: { type: 'number' } },
                  trace_id: { type: 'string' },
                },
              }),
            },
            ...bodyErrors,
          },
        },
      },
      '/v1/retrieve': {
        post: { summary: 'Retrieve chunks only', requestBody: { required: true, content: json(jsonSchemaOf(RetrieveInputSchema)) }, responses: { '200': { description: 'results' }, ...bodyErrors } },
      },
      '/v1/feedback': {
        post: { summary: 'Thumbs up/down on an answer', requestBody: { required: true, content: json(jsonSchemaOf(FeedbackInputSchema)) }, responses: { '202': { description: 'recorded' }, '404': error('no answer with this trace_id in the caller’s tenant'), ...bodyErrors } },
      },
      '/v1/admin/api-keys': {
        post: {
          summary: 'Create an API key of the caller’s tenant (admin scope); the key is in this answer only',
          requestBody: { required: true, content: json(jsonSchemaOf(ApiKeyCreateSchema)) },
          responses: { '201': { description: '{id, key, tenant, scopes, groups, unrestricted, rate_limit, …}' }, ...bodyErrors },
        },
        get: {
          summary: 'List the API keys of the caller’s tenant (admin scope; never the secrets)',
          parameters: [{ name: 'include_revoked', in: 'query', schema: { type: 'string', enum: ['true', 'false'] } }],
          responses: { '200': { description: '{api_keys}' }, '400': error('invalid query parameter'), ...authErrors },
        },
      },
      '/v1/admin/api-keys/{id}': {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        delete: { summary: 'Revoke an API key (admin scope)', responses: { '200': { description: 'the revoked key' }, '404': error('not found'), ...authErrors } },
      },
      '/v1/webhooks/confluence': {
        post: {
          summary: 'Confluence webhook (page_created/updated/removed/trashed/restored); authenticated by X-Hub-Signature (HMAC-SHA256 of the raw body), not an API key',
          security: [],
          responses: { '200': { description: '{status: queued|duplicate|ignored, document_id, version?}' }, '400': { description: 'malformed payload' }, '401': { description: 'bad signature or replayed event' }, '404': { description: 'not configured' } },
        },
      },
      '/v1/webhooks/notion': {
        post: {
          summary: 'Notion webhook: the verification request, then page.* events authenticated by X-Notion-Signature',
          security: [],
          responses: { '200': { description: '{status: queued|duplicate|ignored|verified|verification_received, …}' }, '400': { description: 'malformed payload' }, '401': { description: 'bad signature, token or replayed event' }, '404': { description: 'not configured' } },
        },
      },
      '/v1/session': {
        get: {
          summary: 'The caller: tenant, scopes, kind of credential (the console shows only the pages the key can use) and the trace link template',
          responses: { '200': { description: '{tenant, scopes, kind: anonymous|env|stored, key_id, restricted, trace_url_template}' }, ...authErrors },
        },
      },
      '/v1/sources': {
        get: {
          summary: 'Confluence and Notion as this gateway sees them (ingest or admin scope): connected, webhook secret set, scopes, last webhook and its outcome, last reconciliation counts',
          responses: { '200': { description: '{sources: [{kind, connected, webhook_configured, scopes, last_webhook, last_reconcile}], reconcile_interval_s, tenant}' }, ...authErrors },
        },
      },
      '/v1/sources/reconcile': {
        post: {
          summary: 'Run one reconciliation pass now (admin scope); answers its per-scope counts (upserts = added/updated, deletes = pruned)',
          responses: { '200': { description: '{reports: [{kind, scope, listed, upserts, deletes, error?}]}' }, ...authErrors },
        },
      },
      '/v1/overview': {
        get: {
          summary: 'Documents of the tenant by status, over the last hour (this gateway’s counters) documents that finished ingestion, dead letters, answers, refusals and feedback, and the latest `rag eval` report (ingest or admin scope)',
          responses: { '200': { description: '{documents, window_s, ingested, ingestion_per_min, dead_letters, answers: {answered, refused, refusal_rate}, feedback: {up, down}, eval: null | {finished_at, dataset, results} | {error}} (eval: the latest `rag eval` report of this data folder)' }, ...authErrors },
        },
      },
      '/': { get: { summary: 'The web console (static files; its assets under /assets/ are content-hashed and cached for a year)', security: [], responses: { '200': { description: 'HTML' }, '503': { description: 'the console is not built (`npm run build`)' } } } },
      '/healthz': { get: { summary: 'Liveness', security: [], responses: { '200': { description: 'ok' } } } },
      '/readyz': { get: { summary: 'Readiness', security: [], responses: { '200': { description: 'ready' }, '503': { description: 'not ready' } } } },
      '/metrics': { get: { summary: 'Prometheus metrics', security: [], responses: { '200': { description: 'text exposition' } } } },
    },
  };
}
