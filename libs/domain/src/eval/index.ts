export * from './metrics';
export * from './judge';
