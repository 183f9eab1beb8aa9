export * from './filters';
export * from './text';
