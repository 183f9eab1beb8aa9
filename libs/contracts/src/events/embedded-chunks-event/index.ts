export * from './value';
export { decodeVectorF32, encodeVectorF32 } from './vector-encoding';
export { DocumentKeySchema as EmbeddedChunksEventKeySchema } from '../key';
