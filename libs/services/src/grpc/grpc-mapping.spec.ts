import type { RetrieveRequest } from '@rag/application';
import { AppError } from '@rag/platform';
import {
  embedRequestFromWire,
  fromWireChunk,
  generateRequestFromWire,
  parseFiltersJson,
  rerankRequestFromWire,
  retrieveRequestFromWire,
  retrieveRequestToWire,
  toDegraded,
  toWireChunk,
} from './grpc-mapping';

const chunk = { chunk_id: 'd#v1#0', document_id: 'd', title: 'T', text: 'x', score: 0.5, heading_path: ['A', 'B'] };

const invalid = (fn: () => unknown): AppError => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).code).toBe('invalid_request');
    return e as AppError;
  }
  throw new Error('expected invalid_request');
};

describe('wire mapping', () => {
  it('round-trips a retrieve request, scope and filters included', () => {
    const req: RetrieveRequest = {
      query: 'q',
      vector: Float32Array.from([0.25, -1, 0.5]),
      top_k: 5,
      candidates: 50,
      filters: { team: 'aero', year: { gte: 2020 }, tags: { in: ['a', 'b'] } },
      mode: 'dense',
      scope: { tenant: 'acme', principals: ['group:eng'] },
    };
    expect(retrieveRequestFromWire(retrieveRequestToWire(req))).toEqual(req);
    const open: RetrieveRequest = { query: 'q', top_k: 1, candidates: 1, mode: 'keyword', scope: { tenant: 'acme' } };
    const wire = retrieveRequestToWire(open);
    expect(wire.scope).toEqual({ tenant: 'acme', principals: [], unrestricted: true });
    expect(wire.filters_json).toBe('');
    expect(retrieveRequestFromWire(wire)).toEqual(open);
    // principals [] (restricted to nothing but '*') stays distinct from unrestricted
    expect(retrieveRequestFromWire(retrieveRequestToWire({ ...open, scope: { tenant: 'acme', principals: [] } })).scope).toEqual({ tenant: 'acme', principals: [] });
    expect(retrieveRequestFromWire({ ...wire, mode: '' }).mode).toBe('hybrid');
  });

  it('validates filters_json with FiltersSchema and the reserved keys', () => {
    expect(parseFiltersJson('')).toBeUndefined();
    expect(parseFiltersJson('{"a": 1}')).toEqual({ a: 1 });
    expect(invalid(() => parseFiltersJson('{')).message).toMatch(/not JSON/);
    invalid(() => parseFiltersJson('[1]'));
    invalid(() => parseFiltersJson('{"a": {"gte": "x"}}'));
    invalid(() => parseFiltersJson('{"a": {"in": []}}'));
    expect(invalid(() => parseFiltersJson('{"tenant": "other"}')).message).toMatch(/reserved/);
  });

  it('rejects malformed requests', () => {
    const ok = retrieveRequestToWire({ query: 'q', top_k: 1, candidates: 1, mode: 'hybrid', scope: { tenant: 'acme' } });
    invalid(() => retrieveRequestFromWire({ ...ok, scope: undefined }));
    invalid(() => retrieveRequestFromWire({ ...ok, scope: { tenant: 'bad tenant!', principals: [], unrestricted: true } }));
    invalid(() => retrieveRequestFromWire({ ...ok, top_k: 0 }));
    invalid(() => retrieveRequestFromWire({ ...ok, vector: [Number.NaN] }));
    invalid(() => embedRequestFromWire({ texts: [], input_type: 'query' }));
    invalid(() => embedRequestFromWire({ texts: ['a'], input_type: 'image' }));
    expect(embedRequestFromWire({ texts: ['a'], input_type: '' })).toEqual({ texts: ['a'], inputType: 'query' });
    expect(embedRequestFromWire({ texts: ['a'], input_type: 'passage' }).inputType).toBe('passage');
    invalid(() => rerankRequestFromWire({ query: 'q', top_n: -1, candidates: [] }));
    invalid(() => rerankRequestFromWire({ query: 'q', top_n: 1, candidates: [{ ...toWireChunk(chunk), chunk_id: '' }] }));
    invalid(() => generateRequestFromWire({ question: 'q', sources: [{ ...toWireChunk(chunk), document_id: '' }] }));
  });

  it('maps chunks with optional fields, and drops unknown degraded parts', () => {
    expect(fromWireChunk(toWireChunk(chunk))).toEqual(chunk);
    const full = { ...chunk, parent_text: 'parent', source_url: 'https://x' };
    expect(fromWireChunk(toWireChunk(full))).toEqual(full);
    expect(toDegraded(['dense', 'warp-drive', 'llm'])).toEqual(['dense', 'llm']);
  });
});
