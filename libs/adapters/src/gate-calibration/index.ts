export * from './file-gate-calibration.store';
