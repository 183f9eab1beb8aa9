import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GateCalibration } from '@rag/domain';
import { FileGateCalibrationStore } from './file-gate-calibration.store';

const cal = (tenant: string, latin = 0.5): GateCalibration => ({
  version: 1,
  tenant,
  chunks: 10,
  sampled: 10,
  thresholds: { latin, cjk: 0.4 },
  probes: { latin: { n: 50, q50: 0.1, q95: 0.47 }, cjk: { n: 50, q50: 0, q95: 0 } },
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
    await store.put(cal('other', 0.55));
    await store.put(cal('acme', 0.52));
    const again = new FileGateCalibrationStore(join(dir, 'gate'));
    expect((await again.get('acme'))?.thresholds.latin).toBe(0.52);
    expect((await again.get('other'))?.thresholds.latin).toBe(0.55);
    expect(readdirSync(join(dir, 'gate')).sort()).toEqual(['acme.json', 'other.json']);
  });

  it('reads a damaged or foreign file as absent (the tenant is calibrated again)', async () => {
    const store = new FileGateCalibrationStore(dir);
    writeFileSync(join(dir, 'acme.json'), '{"version": 1, "tena');
    expect(await store.get('acme')).toBeNull();
    writeFileSync(join(dir, 'acme.json'), JSON.stringify({ ...cal('someone-else') }));
    expect(await store.get('acme')).toBeNull();
    writeFileSync(join(dir, 'acme.json'), JSON.stringify({ ...cal('acme'), version: 2 }));
    expect(await store.get('acme')).toBeNull();
  });

  it('never lets a tenant name leave its folder', async () => {
    const store = new FileGateCalibrationStore(join(dir, 'gate'));
    await store.put(cal('../escape'));
    expect(readdirSync(dir)).toEqual(['gate']);
    expect((await store.get('../escape'))?.tenant).toBe('../escape');
  });
});
