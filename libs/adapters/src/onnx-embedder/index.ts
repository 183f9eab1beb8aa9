export { OnnxEmbedder, type OnnxEmbedderOptions } from './onnx-embedder.adapter';
