export * from './config';
export * from './logging';
export * from './errors';
export * from './telemetry';
export * from './health';
