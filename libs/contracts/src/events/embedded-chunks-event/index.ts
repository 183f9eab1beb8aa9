export * from './value';
export { DocumentKeySchema as EmbeddedChunksEventKeySchema } from '../key';
