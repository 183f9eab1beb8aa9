export * from './cross-lingual-embedder.adapter';
