export * from './script-routed-embedder.adapter';
