export * from './factory';
