export * from './config';
export * from './logging';
export * from './errors';
