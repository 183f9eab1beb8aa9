export * from './store-integrity';
