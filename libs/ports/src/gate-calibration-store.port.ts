import type { GateCalibration } from '@rag/domain';

/**
 * Where the relevance gate's per-tenant calibration is kept (libs/domain generation/calibration.ts): one record per
 * tenant, replaced whole. Embedded mode: a JSON file per tenant in the data folder (adapters gate-calibration).
 */
export interface GateCalibrationStore {
  get(tenant: string): Promise<GateCalibration | null>;
  put(calibration: GateCalibration): Promise<void>;
}

export const GATE_CALIBRATION_STORE = Symbol('GATE_CALIBRATION_STORE');
