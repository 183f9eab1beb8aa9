export * from './factory';
export * from './sources.factory';
