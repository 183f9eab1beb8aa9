export { CrossEncoderReranker, type CrossEncoderRerankerOptions, sigmoid } from './cross-encoder.adapter';
