export type EmbedInputType = 'query' | 'passage';

export interface Embedder {
  /** Stable id of the model; vectors of two ids never share a collection/index. */
  readonly modelId: string;
  readonly dim: number;
  /** Returns one L2-normalised vector per text, in order. */
  embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]>;
  close?(): Promise<void>;
}
export const EMBEDDER = Symbol('EMBEDDER');

/**
 * Which vectors a store holds: the model id and dimension, without the model. Processes that store or search
 * vectors but never embed (indexer, retriever) need only this, so they do not load an embedding model.
 */
export interface EmbeddingSpace {
  readonly modelId: string;
  readonly dim: number;
}
export const EMBEDDING_SPACE = Symbol('EMBEDDING_SPACE');
