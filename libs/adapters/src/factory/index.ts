export * from './factory';
export * from './sources.factory';
export * from './shared-state.factory';
