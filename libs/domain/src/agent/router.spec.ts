import { routeQuestion } from './router';

describe('routeQuestion', () => {
  it('sends simple questions down the single-shot path', () => {
    for (const q of [
      'What makes the boundary layer on a swept wing unstable?',
      'what similarity laws must be obeyed when constructing aeroelastic models of heated high speed aircraft .',
      'Which wing shape has the lowest drag that anyone measured?',
      'How do ablative heat shields absorb heat?',
      '尤金袋鼠分布在哪些地区？',
      'flutter margin',
    ]) {
      expect(routeQuestion(q), q).toEqual({ route: 'single', reason: 'simple' });
    }
  });

  it('sends multi-hop-looking questions to the agent', () => {
    expect(routeQuestion('Compare the drag of swept and straight wings').route).toBe('agent');
    expect(routeQuestion('What is the difference between laminar and turbulent flow?')).toEqual({ route: 'agent', reason: 'comparison' });
    expect(routeQuestion('In which city did the leader of the project that built the Zephyr grow up?')).toEqual({ route: 'agent', reason: 'bridge' });
    expect(routeQuestion('In which city did the leader of the Zephyr project grow up?')).toEqual({ route: 'agent', reason: 'bridge' });
    expect(routeQuestion('Who leads the Zephyr project, and where was she born?')).toEqual({ route: 'agent', reason: 'two questions' });
    expect(routeQuestion('Who leads it? Where was she born?')).toEqual({ route: 'agent', reason: 'two questions' });
    expect(routeQuestion('袋鼠和考拉的区别是什么？')).toEqual({ route: 'agent', reason: 'comparison' });
    expect(routeQuestion(Array.from({ length: 31 }, () => 'word').join(' '))).toEqual({ route: 'agent', reason: 'long' });
  });
});
