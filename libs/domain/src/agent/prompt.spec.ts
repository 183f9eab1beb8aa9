import { AGENT_SYSTEM_MARKER, buildAgentPrompt } from './prompt';

describe('buildAgentPrompt', () => {
  it('numbers the passages, lists the calls made and the calls left', () => {
    const [system, user] = buildAgentPrompt(
      'Where did the Zephyr leader grow up?',
      [{ ref: 1, title: 'Zephyr', text: 'The Zephyr project is led by Alice Moreau.' }],
      [{ action: { action: 'keyword_search', query: 'Zephyr leader' }, found: 1 }],
      2,
    );
    expect(system!.content).toContain(AGENT_SYSTEM_MARKER);
    expect(system!.content).toContain('"action":"fetch_document"');
    expect(user!.content).toContain('Question: Where did the Zephyr leader grow up?');
    expect(user!.content).toContain('[1] Zephyr: The Zephyr project is led by Alice Moreau.');
    expect(user!.content).toContain('1. keyword_search "Zephyr leader" -> 1 new passage(s)');
    expect(user!.content).toContain('Calls left: 2.');
  });
  it('clips long passages', () => {
    const [, user] = buildAgentPrompt('q', [{ ref: 1, title: '', text: 'x'.repeat(2000) }], [], 3);
    expect(user!.content).toContain('[1] Untitled: ');
    expect(user!.content.length).toBeLessThan(800);
  });
});
