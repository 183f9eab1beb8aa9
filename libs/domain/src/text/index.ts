export * from './tokenize';
