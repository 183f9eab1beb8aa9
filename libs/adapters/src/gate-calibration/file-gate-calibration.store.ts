import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GateCalibration } from '@rag/domain';
import type { GateCalibrationStore } from '@rag/ports';

/**
 * The relevance gate's calibrations as one JSON file per tenant under `<dir>` (embedded mode: RAG_DATA_DIR/gate/).
 * Written to a temporary file and renamed, so a reader never sees half a record; a file that does not parse (or of
 * another version) reads as absent, so the tenant is calibrated again rather than served a broken record.
 */
export class FileGateCalibrationStore implements GateCalibrationStore {
  constructor(private readonly dir: string) {}

  private file(tenant: string): string {
    // Tenants are [A-Za-z0-9._-] (libs/domain document-id); anything else is encoded rather than trusted as a path.
    return join(this.dir, `${/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(tenant) ? tenant : encodeURIComponent(tenant).replace(/\./g, '%2E')}.json`);
  }

  async get(tenant: string): Promise<GateCalibration | null> {
    let text: string;
    try {
      text = readFileSync(this.file(tenant), 'utf8');
    } catch {
      return null;
    }
    try {
      const v = JSON.parse(text) as GateCalibration;
      return v && v.version === 2 && v.tenant === tenant && v.stats && v.scripts ? v : null;
    } catch {
      return null;
    }
  }

  async put(calibration: GateCalibration): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    const target = this.file(calibration.tenant);
    const tmp = `${target}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(calibration));
    renameSync(tmp, target);
  }
}
