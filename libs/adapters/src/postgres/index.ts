export * from './pg-database';
export * from './migrations';
export * from './pg-registry.adapter';
export * from './pg-source-state.adapter';
export * from './pg-api-key-store.adapter';
export * from './pg-rate-limiter';
export * from './pg-leader-election';
export * from './sqlite-import';
