export * from './config';
export * from './load-or-exit';
