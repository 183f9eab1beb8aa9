export {
  DEFAULT_TENANT,
  MAX_EXTERNAL_DOCUMENT_ID_LENGTH,
  RESERVED_DOCUMENT_ID_PREFIXES,
  documentIdCandidates,
  externalChunkId,
  externalDocumentId,
  externalDocumentIdProblem,
  internalDocumentId,
  internalDocumentIdFilters,
  uploadDocumentIdProblem,
} from './document-id';
export { decodeListCursor, encodeListCursor, type ListCursor } from './list-cursor';
