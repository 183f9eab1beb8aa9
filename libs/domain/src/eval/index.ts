export * from './metrics';
export * from './judge';
export * from './answers';
