export { OnnxEmbedder, type OnnxEmbedderOptions } from './onnx-embedder.adapter';
export * from './auto-fetch';
