export { HashingEmbedder, type HashingEmbedderOptions } from './hashing-embedder.adapter';
