import { join } from 'node:path';
import { runGrounding, type GroundingTask } from '@rag/domain';
import { WorkerGrounding, type WorkerGroundingOptions } from './worker-grounding.adapter';

const pools: WorkerGrounding[] = [];
function pool(opts: Partial<WorkerGroundingOptions> = {}): WorkerGrounding {
  const p = new WorkerGrounding({ workers: 1, timeoutMs: 30_000, memo: { maxEntries: 100, maxChars: 100_000 }, ...opts });
  pools.push(p);
  return p;
}
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});
const faulty = join(__dirname, 'testing/faulty.worker.ts');

const sources = [
  { ref: 1, text: 'Wing structure. The wing root carries the bending load. Spars take shear.', score: 3, title: 'Wings' },
  { ref: 2, text: 'Aeroelastic models of heated aircraft must obey similarity laws.', score: 2, title: 'Aeroelasticity' },
  { ref: 3, text: '尤金袋鼠分布在澳大利亚南部地区。它们体型较小。', score: 1, title: '尤金袋鼠' },
];
const task = (question: string, mode: GroundingTask['mode'] = 'answer'): GroundingTask => ({ mode, question, sources, threshold: 0.45 });

describe('WorkerGrounding', () => {
  it('gives the same gate and extractive answer as in process, for every mode, English and Chinese', async () => {
    const p = pool();
    for (const q of ['what does the wing root carry', 'what similarity laws must aeroelastic models obey', '尤金袋鼠分布在哪些地区', 'capital of france']) {
      for (const mode of ['gate', 'answer', 'extract'] as const) {
        expect(await p.run(task(q, mode))).toEqual(runGrounding(task(q, mode)));
      }
    }
    // repeated (served from the worker's memo): still the same
    expect(await p.run(task('what does the wing root carry'))).toEqual(runGrounding(task('what does the wing root carry')));
    expect(p.stats()).toEqual({ inWorker: 13, retriedInProcess: 0, timedOut: 0 });
  }, 60_000);

  it('a calibrated gate task (idf weights, per-index calibration, dense similarity) gives the same decision in a worker', async () => {
    const p = pool();
    const calibration = { lexical: { q50: 0.1, q95: 0.4 }, dense: { q50: 0.5, q95: 0.6 }, target: 1.3 };
    for (const [q, denseTop] of [['what does the wing root carry', 0.82], ['capital of france', 0.51]] as const) {
      const t: GroundingTask = { ...task(q, 'answer'), threshold: 0.5, termWeights: { wing: 2, root: 3, carry: 1, capital: 6, france: 6 }, unseenWeight: 6, calibration, denseTop };
      const inProcess = runGrounding(t);
      expect(await p.run(t)).toEqual(inProcess);
      expect(inProcess.gate?.signals?.dense_top).toBe(denseTop);
    }
    expect(runGrounding({ ...task('capital of france', 'gate'), threshold: 0.5, termWeights: { capital: 6, france: 6 }, calibration, denseTop: 0.51 }).gate?.refuse).toBe(true);
  }, 60_000);

  it('a worker that dies mid-task: the task is answered in process (same result), and the pool goes on', async () => {
    const p = pool({ workerFile: faulty });
    const q = 'CRASH what does the wing root carry';
    expect(await p.run(task(q))).toEqual(runGrounding(task(q)));
    expect(p.stats()).toMatchObject({ retriedInProcess: 1 });
    // the replacement worker answers the next task
    expect(await p.run(task('what does the wing root carry'))).toEqual(runGrounding(task('what does the wing root carry')));
    expect(p.stats()).toEqual({ inWorker: 1, retriedInProcess: 1, timedOut: 0 });
  }, 60_000);

  it('a task stuck past the time limit resolves timedOut (its thread terminated) while this thread keeps serving; the next task is answered', async () => {
    const p = pool({ workerFile: faulty, timeoutMs: 8000 });
    const started = new Promise<void>((resolve) => p.onWorkerMessage((m) => (m as { hangStarted?: boolean }).hangStarted && resolve()));
    const events: string[] = [];
    const stuck = p.run(task('HANG forever')).then((r) => {
      events.push('task settled');
      return r;
    });
    // queued behind the stuck task: not timed while it waits
    const queued = p.run(task('what does the wing root carry'));
    await started;
    await new Promise((resolve) => setTimeout(resolve, 10));
    events.push('timer ran during the task');
    expect(await stuck).toEqual({ timedOut: true });
    expect(events).toEqual(['timer ran during the task', 'task settled']);
    expect(await queued).toEqual(runGrounding(task('what does the wing root carry')));
    expect(p.stats()).toEqual({ inWorker: 1, retriedInProcess: 0, timedOut: 1 });
  }, 60_000);

  it('rejects a malformed task before posting it, with the problem named', async () => {
    const p = pool();
    await expect(p.run({ ...task('x'), mode: 'nope' as never })).rejects.toThrow(/invalid grounding task: mode must be gate, answer or extract/);
    await expect(p.run({ ...task('x'), sources: [{ ref: 1, text: 5 as never, score: 1 }] })).rejects.toThrow(/sources\[0\]\.text must be a string/);
    expect(() => new WorkerGrounding({ workers: 0, timeoutMs: 1000 })).toThrow(/at least 1 worker/);
  });
});
