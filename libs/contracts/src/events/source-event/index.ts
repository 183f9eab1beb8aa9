export * from './value';
export { DocumentKeySchema as SourceEventKeySchema } from '../key';
