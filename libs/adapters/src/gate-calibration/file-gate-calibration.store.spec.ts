import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GateCalibration } from '@rag/domain';
import { FileGateCalibrationStore } from './file-gate-calibration.store';

const cal = (tenant: string, target = 1.3): GateCalibration => ({
  version: 2,
  tenant,
  chunks: 10,
  sampled: 10,
  scripts: { latin: { lexical: { q50: 0.1, q95: 0.47 }, dense: { q50: 0.5, q95: 0.6 }, target }, cjk: null },
  probes: { latin: 50, cjk: 50 },
  pseudo: { latin: { n: 20, q10: 0.8, q50: 0.9 }, cjk: { n: 0, q10: 0, q50: 0 } },
  stats: { docs: 10, df: { wing: 3 } },
  calibrated_at: '2026-01-01T00:00:00.000Z',
});

describe('FileGateCalibrationStore', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'rag-gate-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps one record per tenant, replaced whole, and survives a new instance (restart)', async () => {
    const store = new FileGateCalibrationStore(join(dir, 'gate'));
    expect(await store.get('acme')).toBeNull();
    await store.put(cal('acme'));
    await store.put(cal('other', 1.2));
    await store.put(cal('acme', 1.1));
    const again = new FileGateCalibrationStore(join(dir, 'gate'));
    expect((await again.get('acme'))?.scripts.latin?.target).toBe(1.1);
    expect((await again.get('other'))?.scripts.latin?.target).toBe(1.2);
    expect(readdirSync(join(dir, 'gate')).sort()).toEqual(['acme.json', 'other.json']);
  });

  it('reads a damaged or foreign file as absent (the tenant is calibrated again)', async () => {
    const store = new FileGateCalibrationStore(dir);
    writeFileSync(join(dir, 'acme.json'), '{"version": 1, "tena');
    expect(await store.get('acme')).toBeNull();
    writeFileSync(join(dir, 'acme.json'), JSON.stringify({ ...cal('someone-else') }));
    expect(await store.get('acme')).toBeNull();
    writeFileSync(join(dir, 'acme.json'), JSON.stringify({ ...cal('acme'), version: 1 }));
    expect(await store.get('acme')).toBeNull();
  });

  it('never lets a tenant name leave its folder', async () => {
    const store = new FileGateCalibrationStore(join(dir, 'gate'));
    await store.put(cal('../escape'));
    expect(readdirSync(dir)).toEqual(['gate']);
    expect((await store.get('../escape'))?.tenant).toBe('../escape');
  });
});
