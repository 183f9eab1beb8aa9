import { z } from 'zod';
import { ApiKeyCreateSchema, BatchInputSchema, DocumentInputSchema, FeedbackInputSchema, QueryInputSchema, RetrieveInputSchema } from '@rag/contracts';

const schema = (s: z.ZodType) => z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' });
const json = (s: object) => ({ 'application/json': { schema: s } });
const errorBody = {
  type: 'object',
  properties: { error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} }, required: ['code', 'message'] } },
};
const errors = {
  '400': { description: 'invalid request', content: json(errorBody) },
  '401': { description: 'missing or invalid API key (or forwarded JWT)', content: json(errorBody) },
  '403': { description: 'the API key lacks the scope of this route, or the JWT names another tenant', content: json(errorBody) },
  '429': { description: 'rate limit of the API key exceeded; see the Retry-After header', content: json(errorBody) },
  '413': { description: 'body over the limit', content: json(errorBody) },
};

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
          requestBody: {
            content: {
              ...json(schema(DocumentInputSchema)),
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  properties: {
                    file: { type: 'string', format: 'binary' },
                    id: { type: 'string' },
                    title: { type: 'string' },
                    mime_type: { type: 'string' },
                    metadata: { type: 'string', description: 'JSON object' },
                    acl: { type: 'string', description: 'JSON array' },
                  },
                  required: ['file'],
                },
              },
            },
          },
          responses: { '202': { description: 'queued' }, ...errors, '415': { description: 'unsupported type', content: json(errorBody) } },
        },
        get: { summary: 'List documents', responses: { '200': { description: 'documents and counts by status' } } },
      },
      '/v1/documents:batch': {
        post: { summary: 'Add many documents', requestBody: { content: json(schema(BatchInputSchema)) }, responses: { '202': { description: '{accepted, rejected}' }, ...errors } },
      },
      '/v1/documents/{id}': {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        get: { summary: 'Document status', responses: { '200': { description: 'status' }, '404': { description: 'not found' } } },
        delete: { summary: 'Delete a document from every store', responses: { '202': { description: 'queued' }, '404': { description: 'not found' } } },
      },
      '/v1/query': {
        post: {
          summary: 'Answer a question with citations (stream:true for server-sent events)',
          requestBody: { content: json(schema(QueryInputSchema)) },
          responses: { '200': { description: '{answer, refused, citations, degraded, timings_ms, trace_id}' }, ...errors },
        },
      },
      '/v1/retrieve': {
        post: { summary: 'Retrieve chunks only', requestBody: { content: json(schema(RetrieveInputSchema)) }, responses: { '200': { description: 'results' }, ...errors } },
      },
      '/v1/feedback': {
        post: { summary: 'Thumbs up/down on an answer', requestBody: { content: json(schema(FeedbackInputSchema)) }, responses: { '202': { description: 'recorded' }, ...errors } },
      },
      '/v1/admin/api-keys': {
        post: {
          summary: 'Create an API key of the caller’s tenant (admin scope); the key is in this answer only',
          requestBody: { content: json(schema(ApiKeyCreateSchema)) },
          responses: { '201': { description: '{id, key, tenant, scopes, groups, unrestricted, rate_limit, …}' }, ...errors },
        },
        get: { summary: 'List the API keys of the caller’s tenant (admin scope; never the secrets)', responses: { '200': { description: '{api_keys}' }, ...errors } },
      },
      '/v1/admin/api-keys/{id}': {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        delete: { summary: 'Revoke an API key (admin scope)', responses: { '200': { description: 'the revoked key' }, '404': { description: 'not found' }, ...errors } },
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
      '/healthz': { get: { summary: 'Liveness', security: [], responses: { '200': { description: 'ok' } } } },
      '/readyz': { get: { summary: 'Readiness', security: [], responses: { '200': { description: 'ready' }, '503': { description: 'not ready' } } } },
      '/metrics': { get: { summary: 'Prometheus metrics', security: [], responses: { '200': { description: 'text exposition' } } } },
    },
  };
}
