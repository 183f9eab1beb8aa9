import { AGENT_ACTION_SCHEMA, actionKey, agentActionSchema, parseAgentAction, repairJsonObject, validateAgentAction } from './action';

describe('parseAgentAction', () => {
  it('parses each tool and answer from strict JSON', () => {
    expect(parseAgentAction('{"action":"dense_search","query":"swept wing"}', 0)).toEqual({ ok: true, action: { action: 'dense_search', query: 'swept wing' }, repaired: false });
    expect(parseAgentAction('{"action":"keyword_search","query":"Alice Moreau"}', 0)).toEqual({ ok: true, action: { action: 'keyword_search', query: 'Alice Moreau' }, repaired: false });
    expect(parseAgentAction('{"action":"filtered_search","query":"flutter","field":"team","value":"structures"}', 0)).toEqual({
      ok: true,
      action: { action: 'filtered_search', query: 'flutter', field: 'team', value: 'structures' },
      repaired: false,
    });
    expect(parseAgentAction('{"action":"fetch_document","ref":2}', 3)).toEqual({ ok: true, action: { action: 'fetch_document', ref: 2 }, repaired: false });
    expect(parseAgentAction('{"action":"answer"}', 3)).toEqual({ ok: true, action: { action: 'answer' }, repaired: false });
  });

  it('repairs what small models write: prose and fences around it, single quotes, bare keys, trailing commas', () => {
    const r = parseAgentAction("Sure! Next:\n```json\n{action: 'keyword_search', query: 'Zephyr project leader',}\n```", 0);
    expect(r).toEqual({ ok: true, action: { action: 'keyword_search', query: 'Zephyr project leader' }, repaired: true });
    expect(parseAgentAction('{"action": "fetch_document", "ref": "[1]"}', 1)).toMatchObject({ ok: true, action: { action: 'fetch_document', ref: 1 } });
  });

  it('closes a reply cut off mid-object', () => {
    expect(parseAgentAction('{"action":"dense_search","query":"leading edge vortices', 0)).toEqual({
      ok: true,
      action: { action: 'dense_search', query: 'leading edge vortices' },
      repaired: true,
    });
    expect(parseAgentAction('{"action":"answer",', 0)).toMatchObject({ ok: true, action: { action: 'answer' } });
  });

  it('maps tool aliases and nested tool-call shapes', () => {
    expect(parseAgentAction('{"tool":"bm25","arguments":{"query":"x"}}', 0)).toEqual({ ok: true, action: { action: 'keyword_search', query: 'x' }, repaired: true });
    expect(parseAgentAction('{"action":{"name":"search","arguments":{"query":"y"}}}', 0)).toEqual({ ok: true, action: { action: 'dense_search', query: 'y' }, repaired: true });
    expect(parseAgentAction('{"action":"Final Answer"}', 0)).toMatchObject({ ok: true, action: { action: 'answer' } });
  });

  it('reports what cannot be used as an error value, never a throw', () => {
    expect(parseAgentAction('', 0)).toEqual({ ok: false, error: 'empty reply' });
    expect(parseAgentAction('I think we should search more.', 0)).toMatchObject({ ok: false, error: expect.stringContaining('no JSON object') });
    expect(parseAgentAction('{"action":"delete_index"}', 0)).toMatchObject({ ok: false, error: expect.stringContaining('unknown action') });
    expect(parseAgentAction('{"action":"dense_search","query":"  "}', 0)).toMatchObject({ ok: false, error: expect.stringContaining('non-empty query') });
    expect(parseAgentAction('{"action":"fetch_document","ref":4}', 3)).toMatchObject({ ok: false, error: expect.stringContaining('1..3') });
    expect(parseAgentAction('{"action":"filtered_search","query":"q","field":"bad key!","value":"v"}', 0)).toMatchObject({ ok: false });
    expect(parseAgentAction('{"action":"filtered_search","query":"q","field":"team","value":""}', 0)).toMatchObject({ ok: false });
    expect(parseAgentAction('{"a": [1, 2}', 0)).toMatchObject({ ok: false });
    expect(validateAgentAction('answer', 0)).toMatchObject({ ok: false });
    expect(validateAgentAction(null, 0)).toMatchObject({ ok: false });
  });

  it('cuts an over-long query at a word boundary', () => {
    const long = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
    const r = parseAgentAction(JSON.stringify({ action: 'dense_search', query: long }), 0);
    expect(r.ok).toBe(true);
    const q = (r as { action: { query: string } }).action.query;
    expect(q.length).toBeLessThanOrEqual(300);
    expect(long.startsWith(q)).toBe(true);
    expect(q.endsWith(' ')).toBe(false);
  });
});

describe('repairJsonObject', () => {
  it('turns Python literals into JSON and keeps escaped quotes', () => {
    expect(JSON.parse(repairJsonObject("{'a': True, 'b': None, 'c': 'it\\'s \"x\"'}")!)).toEqual({ a: true, b: null, c: 'it\'s "x"' });
  });
  it('has nothing to repair without an object', () => {
    expect(repairJsonObject('no braces here')).toBeUndefined();
    expect(repairJsonObject('{"a": 1]')).toBeUndefined();
  });
});

describe('AGENT_ACTION_SCHEMA and actionKey', () => {
  it('has one variant per action, every key a bounded string or an integer', () => {
    expect(AGENT_ACTION_SCHEMA.oneOf.map((v) => v.properties.action.const)).toEqual(['dense_search', 'keyword_search', 'filtered_search', 'fetch_document', 'answer']);
  });
  it('leaves fetch_document out while there is no passage to fetch', () => {
    expect(agentActionSchema(0).oneOf).toHaveLength(4);
    expect(JSON.stringify(agentActionSchema(0))).not.toContain('fetch_document');
    expect(agentActionSchema(2)).toBe(AGENT_ACTION_SCHEMA);
  });
  it('tells repeated calls apart from new ones (case-insensitive queries)', () => {
    expect(actionKey({ action: 'dense_search', query: 'Swept Wing' })).toBe(actionKey({ action: 'dense_search', query: 'swept wing' }));
    expect(actionKey({ action: 'dense_search', query: 'x' })).not.toBe(actionKey({ action: 'keyword_search', query: 'x' }));
  });
});
