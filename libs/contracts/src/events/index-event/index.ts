export * from './value';
export { DocumentKeySchema as IndexEventKeySchema } from '../key';
