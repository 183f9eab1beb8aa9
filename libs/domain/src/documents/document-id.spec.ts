import { parseChunkId } from '@rag/contracts';
import {
  documentIdCandidates,
  externalChunkId,
  externalDocumentId,
  externalDocumentIdProblem,
  internalDocumentId,
  internalDocumentIdFilters,
  uploadDocumentIdProblem,
} from './document-id';

describe('tenant-scoped document ids', () => {
  it('keeps the default tenant’s ids as they are and qualifies every other tenant’s', () => {
    expect(internalDocumentId('default', 'upload:1')).toBe('upload:1');
    expect(internalDocumentId('acme', 'upload:1')).toBe('acme#upload:1');
    expect(internalDocumentId('beta', 'upload:1')).not.toBe(internalDocumentId('acme', 'upload:1'));
  });

  it('is a bijection per tenant: external → internal → external', () => {
    for (const tenant of ['default', 'acme', 'a.b-c_9']) {
      for (const id of ['x', 'upload:3f2a', 'confluence:acme.atlassian.net:123', 'ü-ä']) {
        expect(externalDocumentId(tenant, internalDocumentId(tenant, id))).toBe(id);
      }
    }
  });

  it('does not map an id qualified for another tenant back to the caller', () => {
    expect(externalDocumentId('beta', 'acme#x')).toBeNull();
    expect(externalDocumentId('default', 'acme#x')).toBeNull();
    expect(externalDocumentId('acme', 'acme#x')).toBe('x');
    // A plain id (default tenant, or a record stored before ids were scoped) reads as itself.
    expect(externalDocumentId('acme', 'x')).toBe('x');
  });

  it('never lets two tenants share an internal id or a chunk id', () => {
    const ids = new Set<string>();
    for (const tenant of ['default', 'acme', 'acme.x', 'v1']) for (const id of ['acme', 'x', 'v1', 'acme.x']) ids.add(internalDocumentId(tenant, id));
    expect(ids.size).toBe(16);
    // Chunk ids parse back to the internal document id (the first `#` belongs to the tenant qualifier).
    expect(parseChunkId(`${internalDocumentId('acme', 'v1')}#v3#0`)).toEqual({ document_id: 'acme#v1', version: 3, ordinal: 0 });
    expect(externalChunkId('acme', 'acme#v1#v3#0')).toBe('v1#v3#0');
    expect(externalChunkId('default', 'acme#v3#0')).toBe('acme#v3#0');
  });

  it('rejects external ids with "#" or whitespace, and invalid tenants', () => {
    expect(externalDocumentIdProblem('a#b')).toMatch(/#/);
    expect(externalDocumentIdProblem('a b')).toMatch(/whitespace/);
    expect(externalDocumentIdProblem('')).toMatch(/empty/);
    expect(externalDocumentIdProblem('x'.repeat(513))).toMatch(/512/);
    expect(() => internalDocumentId('acme', 'beta#x')).toThrow(/#/);
    expect(() => internalDocumentId('bad tenant', 'x')).toThrow(/tenant/);
  });

  it('reserves the connectors’ prefixes for uploads (any case)', () => {
    expect(uploadDocumentIdProblem('confluence:site:1')).toMatch(/reserved for the confluence connector/);
    expect(uploadDocumentIdProblem('Notion:abc')).toMatch(/reserved for the notion connector/);
    expect(uploadDocumentIdProblem('upload:1')).toBeNull();
    expect(uploadDocumentIdProblem('my-confluence:1')).toBeNull();
  });

  it('lists the qualified id first, then the legacy plain id (non-default tenants only)', () => {
    expect(documentIdCandidates('acme', 'x')).toEqual(['acme#x', 'x']);
    expect(documentIdCandidates('default', 'x')).toEqual(['x']);
    expect(documentIdCandidates('acme', 'beta#x')).toEqual([]);
  });

  it('turns document_id filters into the tenant’s internal ids (qualified, plus the legacy plain id)', () => {
    expect(internalDocumentIdFilters('acme', { document_id: 'x', team: 'a' })).toEqual({ document_id: { in: ['acme#x', 'x'] }, team: 'a' });
    expect(internalDocumentIdFilters('acme', { document_id: { in: ['x', 'y'] } })).toEqual({ document_id: { in: ['acme#x', 'x', 'acme#y', 'y'] } });
    // An id qualified for another tenant stays an id nobody has (its qualified form has two '#').
    expect(internalDocumentIdFilters('acme', { document_id: 'beta#x' })).toEqual({ document_id: { in: ['acme#beta#x'] } });
    expect(internalDocumentIdFilters('default', { document_id: 'x' })).toEqual({ document_id: 'x' });
    expect(internalDocumentIdFilters('acme', { team: 'a' })).toEqual({ team: 'a' });
    expect(internalDocumentIdFilters('acme', undefined)).toBeUndefined();
  });
});
