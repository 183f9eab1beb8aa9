import { join } from 'node:path';
import { AppError, livenessResponse, metricsRegistry, resetUnrecoverableForTests, setLogLevel } from '@rag/platform';
import { OnnxWorkerHost } from './worker-onnx-embedder';

setLogLevel('silent');

/*
 * When the ONNX worker thread dies, piscina starts another, into which ONNX Runtime's binding cannot be loaded: the host
 * must fail every run at once with `unavailable` and mark the process for a restart (liveness 503), instead of leaving
 * an embedder that fails every passage forever. A test worker that loads no model stands in for the thread.
 */
describe('OnnxWorkerHost when its worker thread dies', () => {
  afterEach(() => resetUnrecoverableForTests());

  it('fails the run in flight and every waiting run with unavailable, later runs at once, and turns /healthz to 503', async () => {
    const host = OnnxWorkerHost.forTests(join(__dirname, 'testing/crashing-onnx.worker.ts'));
    // serving: errors come back as values, the process is live
    expect(await host.run({ op: 'embed', key: 'm', texts: ['fine'], inputType: 'passage' })).toMatchObject({ ok: false, code: 'unavailable' });
    expect(host.failure).toBeUndefined();
    expect(livenessResponse().code).toBe(200);

    const crash = host.run({ op: 'embed', key: 'm', texts: ['CRASH'], inputType: 'passage' });
    const waitingPassage = host.run({ op: 'embed', key: 'm', texts: ['after'], inputType: 'passage' });
    // passages run in arrival order, so these two wait behind the crash (a query would overtake it)
    const waitingPassage2 = host.run({ op: 'embed', key: 'm', texts: ['after, too'], inputType: 'passage' });
    for (const p of [crash, waitingPassage, waitingPassage2]) {
      const e = await p.then(() => null, (err: unknown) => err);
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).code).toBe('unavailable');
      expect((e as AppError).message).toMatch(/ONNX worker thread failed .*process restart/);
    }
    expect(host.failure).toBeTruthy();

    // later runs fail at once, without a round trip to the new thread
    await expect(host.run({ op: 'embed', key: 'm', texts: ['later'], inputType: 'query' })).rejects.toMatchObject({ code: 'unavailable' });

    const live = livenessResponse();
    expect(live.code).toBe(503);
    expect(live.body).toMatchObject({ status: 'restart_required', unrecoverable: [{ part: 'onnx-worker' }] });
    expect(await metricsRegistry.metrics()).toMatch(/rag_unrecoverable\{part="onnx-worker"\} 1/);
  });
});
