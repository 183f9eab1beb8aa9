export * from './filters';
