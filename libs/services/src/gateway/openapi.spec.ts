import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ApiKeyCreateSchema, DocumentInputSchema, FeedbackInputSchema, QueryInputSchema, RetrieveInputSchema } from '@rag/contracts';
import { MultipartFieldsSchema } from './documents.controller';
import { buildOpenApi } from './openapi';

type Op = { security?: unknown[]; responses: Record<string, unknown>; requestBody?: { content: Record<string, { schema: object }> } };
const doc = buildOpenApi('test');
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item as Record<string, Op>)
    .filter(([method]) => method !== 'parameters')
    .map(([method, op]) => ({ path, method, op })),
);
const ajv = new Ajv2020({ strict: false, allErrors: true, formats: { binary: true } });
const bodySchema = (path: string, type = 'application/json') => {
  const op = operations.find((o) => o.path === path && o.method === 'post')!.op;
  return op.requestBody!.content[type]!.schema;
};

/**
 * Each sample is checked against the published JSON Schema (ajv) and the zod schema the server validates with: they
 * must agree, so the OpenAPI never allows a body the server refuses (nor the reverse, for these samples).
 */
const SAMPLES: { path: string; zod: z.ZodType; bodies: unknown[] }[] = [
  {
    path: '/v1/documents',
    zod: DocumentInputSchema,
    bodies: [
      { text: 'hello' },
      { id: 'a', content_base64: 'aGVsbG8=' },
      { id: 'a', text: 'x', content_base64: 'aGVsbG8=' },
      {},
      { title: 't' },
      { text: '   ' },
      { text: '\n\t' },
      { id: 'has space', text: 'x' },
      { id: 'has#hash', text: 'x' },
      { id: 'x'.repeat(3000), text: 'x' },
      { id: '', text: 'x' },
      { text: 'x', extra: 1 },
      { text: 'x', metadata: { year: 1962, tags: ['a'], ok: true } },
      { text: 'x', metadata: { '': 1 } },
      { text: 'x', acl: ['*', 'group:eng'] },
      { text: 'x', acl: [''] },
      { text: 'x', mime_type: '' },
    ],
  },
  // Not in zod, refused by the service after decoding ("the document is empty"); the schema says so.
  { path: '/v1/documents', zod: DocumentInputSchema.refine((d) => d.content_base64 === undefined || Buffer.from(d.content_base64, 'base64').length > 0), bodies: [{ content_base64: '' }, { content_base64: 'A' }, { content_base64: 'AA' }] },
  {
    path: '/v1/query',
    zod: QueryInputSchema,
    bodies: [
      { question: 'what?' },
      { question: '   ' },
      { question: '' },
      { question: 'q', top_k: 0 },
      { question: 'q', top_k: 5, mode: 'dense', rerank: false, stream: true },
      { question: 'q', filters: { year: { gte: 1962 } } },
      { question: 'q', filters: { year: {} } },
      { question: 'q', filters: { year: { gte: 1, foo: 2 } } },
      { question: 'q', filters: { 'bad key': 1 } },
      { question: 'q', filters: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, i])) },
      { question: 'q', filters: Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, i])) },
      { question: 'q', filters: { topic: { in: [] } } },
      { question: 'q', filters: { topic: { in: ['a', 1] } } },
      { question: 'q', mode: 'fuzzy' },
    ],
  },
  { path: '/v1/retrieve', zod: RetrieveInputSchema, bodies: [{ query: 'q' }, { query: ' ' }, { query: 'q', stream: true }, { query: 'q', top_k: 101 }] },
  { path: '/v1/feedback', zod: FeedbackInputSchema, bodies: [{ trace_id: 't', rating: 'up' }, { trace_id: '', rating: 'up' }, { trace_id: 't', rating: 'meh' }] },
  {
    path: '/v1/admin/api-keys',
    zod: ApiKeyCreateSchema,
    bodies: [
      { scopes: ['query'] },
      { scopes: [] },
      { scopes: ['root'] },
      { scopes: ['query'], unrestricted: true, groups: ['hr'] },
      { scopes: ['query'], unrestricted: true, groups: [] },
      { scopes: ['query'], unrestricted: false, groups: ['hr'] },
      { scopes: ['query'], groups: [' hr'] },
      { scopes: ['query'], groups: ['hr '] },
      { scopes: ['query'], groups: ['a b'] },
      { scopes: ['query'], rate_limit: { rps: 0, burst: 1 } },
      { scopes: ['query'], rate_limit: { rps: 0.5, burst: 1 } },
      { scopes: ['query'], tenant: 'bad tenant' },
    ],
  },
];

describe('OpenAPI document', () => {
  it('documents 401, 403 and 429 on every route that needs an API key, and none on the public ones', () => {
    const authenticated = operations.filter((o) => o.op.security === undefined);
    expect(authenticated.map((o) => `${o.method} ${o.path}`).sort()).toEqual(
      [
        'post /v1/documents',
        'get /v1/documents',
        'post /v1/documents:batch',
        'get /v1/documents/{id}',
        'delete /v1/documents/{id}',
        'post /v1/query',
        'post /v1/retrieve',
        'post /v1/feedback',
        'post /v1/admin/api-keys',
        'get /v1/admin/api-keys',
        'delete /v1/admin/api-keys/{id}',
        'get /v1/session',
        'get /v1/sources',
        'post /v1/sources/reconcile',
        'get /v1/overview',
        'get /v1/documents/{id}/chunks',
      ].sort(),
    );
    for (const { path, method, op } of authenticated) {
      for (const status of ['401', '403', '429']) expect(op.responses[status], `${method} ${path} ${status}`).toBeDefined();
      if (op.requestBody) for (const status of ['400', '413']) expect(op.responses[status], `${method} ${path} ${status}`).toBeDefined();
    }
  });

  it('request body schemas agree with the zod schemas the server validates with (refinements included)', () => {
    for (const { path, zod, bodies } of SAMPLES) {
      const validate = ajv.compile(bodySchema(path));
      for (const body of bodies) {
        expect(validate(body), `${path} ${JSON.stringify(body).slice(0, 120)}: schema vs server`).toBe(zod.safeParse(body).success);
      }
    }
    // The batch items are document bodies.
    const batch = ajv.compile(bodySchema('/v1/documents:batch'));
    expect(batch({ documents: [{ text: 'a' }] })).toBe(true);
    expect(batch({ documents: [{ text: 'a', content_base64: 'YQ==' }] })).toBe(false);
    expect(batch({ documents: [] })).toBe(false);
  });

  it('multipart fields have the JSON body’s constraints: an id with a space, # or 3000 characters is refused', () => {
    const validate = ajv.compile(bodySchema('/v1/documents', 'multipart/form-data'));
    const file = 'binary';
    for (const fields of [{ id: 'ok-id' }, { id: 'has space' }, { id: 'a#b' }, { id: 'x'.repeat(3000) }, { title: 't'.repeat(2000) }, { mime_type: '' }, { other: 'x' }]) {
      expect(validate({ file, ...fields }), JSON.stringify(fields).slice(0, 80)).toBe(MultipartFieldsSchema.safeParse(fields).success);
    }
    expect(validate({ id: 'no-file' })).toBe(false);
  });
});

describe('/v1/query answer schema (issue 15: statements)', () => {
  const op = operations.find((o) => o.path === '/v1/query' && o.method === 'post')!.op;
  const schema = (op.responses['200'] as { content: Record<string, { schema: object }> }).content['application/json']!.schema;
  const validate = ajv.compile(schema);
  const answer = {
    answer: 'Lift rises [1].',
    refused: false,
    citations: [{ ref: 1 }],
    statements: [{ text: 'Lift rises.', source_ids: [1], support: 0.9, supported: true }],
    degraded: [],
    timings_ms: { total: 3 },
    trace_id: 't',
  };

  it('accepts an answer with its statements and requires them', () => {
    expect(validate(answer), JSON.stringify(validate.errors)).toBe(true);
    const { statements: _s, ...without } = answer;
    expect(validate(without)).toBe(false);
  });

  it('a statement needs text, source_ids, support in [0, 1] and supported', () => {
    expect(validate({ ...answer, statements: [{ text: 'x', source_ids: [1], support: 1.5, supported: true }] })).toBe(false);
    expect(validate({ ...answer, statements: [{ text: 'x', source_ids: [0], support: 0.5, supported: false }] })).toBe(false);
    expect(validate({ ...answer, statements: [{ text: 'x', support: 0.5, supported: false }] })).toBe(false);
  });
});
