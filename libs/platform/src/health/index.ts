export * from './liveness';
