import {
  parseAliasResponse,
  parseBulkResponse,
  parseCountResponse,
  parseDeleteByQueryResponse,
  parseMgetResponse,
  parseReindexResponse,
  parseSearchResponse,
} from './responses';

describe('response parsing', () => {
  it('bulk: no failures, or the failed items with reasons', () => {
    expect(parseBulkResponse({ took: 3, errors: false, items: [{ index: { _id: 'a', status: 201, result: 'created' } }] })).toEqual([]);
    const failures = parseBulkResponse({
      took: 3,
      errors: true,
      items: [
        { index: { _id: 'a', status: 201, result: 'created' } },
        {
          index: {
            _id: 'b',
            status: 400,
            error: { type: 'mapper_parsing_exception', reason: 'failed to parse field [md_n.year]', caused_by: { type: 'number_format_exception', reason: 'x' } },
          },
        },
      ],
    });
    expect(failures).toEqual([
      { id: 'b', status: 400, error: 'mapper_parsing_exception: failed to parse field [md_n.year] (caused by number_format_exception: x)' },
    ]);
    expect(() => parseBulkResponse({ errors: false })).toThrow(/items/);
  });

  it('search: hits from _source, score, partial-result signals', () => {
    const r = parseSearchResponse({
      took: 2,
      timed_out: false,
      _shards: { total: 2, successful: 1, skipped: 0, failed: 1 },
      hits: {
        max_score: 3.2,
        hits: [{ _index: 'x-v1', _id: 'd#v1#0', _score: 3.2, _source: { chunk_id: 'd#v1#0', document_id: 'd', version: 1 }, sort: [3.2, 'd#v1#0'] }],
      },
    });
    expect(r.hits).toEqual([{ chunk_id: 'd#v1#0', document_id: 'd', version: 1, score: 3.2 }]);
    expect(r.failedShards).toBe(1);
    expect(() => parseSearchResponse({ hits: { hits: [{ _id: 'x', _score: 1, _source: {} }] } })).toThrow(/chunk_id/);
    expect(() => parseSearchResponse({ error: 'x' })).toThrow(/hits/);
  });

  it('mget: found chunks by chunk id, missing skipped, errors thrown', () => {
    const chunk = { chunk_id: 'a#v1#0', document_id: 'a', text: 'x' };
    const m = parseMgetResponse({ docs: [{ _id: 'a#v1#0', found: true, _source: { chunk } }, { _id: 'zz', found: false }] });
    expect([...m.keys()]).toEqual(['a#v1#0']);
    expect(m.get('a#v1#0')).toEqual(chunk);
    expect(() => parseMgetResponse({ docs: [{ _id: 'q', error: { type: 'x', reason: 'y' } }] })).toThrow(/mget of q failed/);
  });

  it('delete_by_query: deleted count; failures and time-outs throw', () => {
    expect(parseDeleteByQueryResponse({ took: 5, timed_out: false, total: 3, deleted: 3, failures: [] })).toBe(3);
    expect(() => parseDeleteByQueryResponse({ deleted: 1, failures: [{ cause: { type: 'x' }, type: 'search_failure', reason: 'r' }] })).toThrow(/failed/);
    expect(() => parseDeleteByQueryResponse({ deleted: 1, timed_out: true, failures: [] })).toThrow(/timed out/);
  });

  it('count, aliases, reindex', () => {
    expect(parseCountResponse({ count: 12, _shards: {} })).toBe(12);
    expect(() => parseCountResponse({})).toThrow();
    expect(parseAliasResponse({ 'p-v2': { aliases: { 'p-read': {} } }, 'p-v1': { aliases: { 'p-read': {} } } })).toEqual(['p-v1', 'p-v2']);
    expect(parseAliasResponse({})).toEqual([]);
    expect(parseReindexResponse({ total: 5, created: 4, updated: 0, version_conflicts: 1, failures: [] })).toEqual({
      total: 5,
      created: 4,
      updated: 0,
      versionConflicts: 1,
    });
  });
});
