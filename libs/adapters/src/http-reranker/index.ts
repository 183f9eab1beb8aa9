export { HttpReranker, type HttpRerankerOptions, type RerankFlavor } from './http-reranker.adapter';
