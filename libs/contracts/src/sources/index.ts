export * from './confluence';
export * from './notion';
