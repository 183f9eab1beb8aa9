/**
 * The gateway's /readyz under a hung dependency (failure injection): a registry or bus whose call never settles
 * makes readiness answer 503 naming it within the time limit, instead of a probe that hangs until the kubelet's
 * own timeout (which reads as "unknown", not "not ready").
 */
import type { Bus, Registry } from '@rag/ports';
import { HealthController } from './health.controller';

function response() {
  const r = { code: 0, body: undefined as unknown, status(c: number) { r.code = c; return r; }, json(b: unknown) { r.body = b; return r; } };
  return r;
}
const never = <T>() => new Promise<T>(() => {});

describe('gateway /readyz', () => {
  it('answers 200 with counts and backlog when the registry and bus answer', async () => {
    const registry = { countByStatus: async () => ({ indexed: 3 }) } as unknown as Registry;
    const bus = { lag: async () => [{ group: 'g', topic: 't', lag: 2 }] } as unknown as Bus;
    const res = response();
    await new HealthController(registry, bus).readyz(res as never);
    expect(res.code).toBe(200);
    expect(res.body).toMatchObject({ status: 'ready', documents: { indexed: 3 }, backlog: 2 });
  });

  it('answers 503 naming the registry when it hangs', async () => {
    const registry = { countByStatus: () => never() } as unknown as Registry;
    const bus = { lag: async () => [] } as unknown as Bus;
    const res = response();
    await new HealthController(registry, bus).readyz(res as never);
    expect(res.code).toBe(503);
    expect(String((res.body as { error: string }).error)).toMatch(/registry.*not read within/);
  });

  it('answers 503 naming the bus when it hangs', async () => {
    const registry = { countByStatus: async () => ({}) } as unknown as Registry;
    const bus = { lag: () => never() } as unknown as Bus;
    const res = response();
    await new HealthController(registry, bus).readyz(res as never);
    expect(res.code).toBe(503);
    expect(String((res.body as { error: string }).error)).toMatch(/bus.*not read within/);
  });
});
