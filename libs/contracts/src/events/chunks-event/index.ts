export * from './value';
export { DocumentKeySchema as ChunksEventKeySchema } from '../key';
