import { loadConfigOrExit } from './load-or-exit';

describe('loadConfigOrExit', () => {
  afterEach(() => vi.restoreAllMocks());

  it('returns the validated configuration', () => {
    expect(loadConfigOrExit('svc', { RAG_PORT: '9123' }).RAG_PORT).toBe(9123);
    expect(loadConfigOrExit('svc', {}, { RAG_PORT: 9124 }).RAG_PORT).toBe(9124);
  });

  it('ends the process with exit code 2 and one message naming the process and every bad setting', () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => (written.push(String(s)), true));
    const exit = vi.spyOn(process, 'exit').mockImplementation((code?: string | number | null) => {
      throw new Error(`exit ${code}`);
    });
    expect(() => loadConfigOrExit('indexer', { RAG_PORT: 'eighty', RAG_BUS: 'carrier-pigeon' })).toThrow('exit 2');
    expect(exit).toHaveBeenCalledWith(2);
    expect(written.join('')).toMatch(/^indexer: invalid configuration:\n/);
    expect(written.join('')).toMatch(/RAG_PORT/);
    expect(written.join('')).toMatch(/RAG_BUS/);
  });
});
