export * from './registry.contract';
export * from './source-state.contract';
export * from './api-key-store.contract';
