import { AGENT_DEFAULT_STEPS, AGENT_MAX_STEPS, AgentSteps, clampAgentSteps } from './steps';

describe('agent step accounting', () => {
  it('clamps the cap into 1..5, default 3', () => {
    expect(AGENT_DEFAULT_STEPS).toBe(3);
    expect(AGENT_MAX_STEPS).toBe(5);
    expect(clampAgentSteps(undefined)).toBe(3);
    expect(clampAgentSteps(Number.NaN)).toBe(3);
    expect(clampAgentSteps(0)).toBe(1);
    expect(clampAgentSteps(9)).toBe(5);
    expect(clampAgentSteps(2.7)).toBe(2);
  });

  it('never grants more hops than the cap', () => {
    for (const max of [1, 3, 5, 50]) {
      const s = new AgentSteps(max);
      let granted = 0;
      while (s.next()) granted++;
      expect(granted).toBe(Math.min(max, 5));
      expect(s.next()).toBe(false);
      expect(s.taken).toBe(granted);
      expect(s.left).toBe(0);
    }
  });

  it('refuses the same tool call twice', () => {
    const s = new AgentSteps(3);
    expect(s.record({ action: 'keyword_search', query: 'a' })).toBe(true);
    expect(s.record({ action: 'keyword_search', query: 'b' })).toBe(true);
    expect(s.record({ action: 'keyword_search', query: 'A' })).toBe(false);
  });
});
