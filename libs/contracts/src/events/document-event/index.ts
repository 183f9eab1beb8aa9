export * from './value';
export { DocumentKeySchema as DocumentEventKeySchema } from '../key';
