export { confluenceStorageToBlocks, confluenceStorageToHtml } from './confluence-storage';
export { notionBlocksToBlocks, notionPageTitle } from './notion-blocks';
export { verifyHmacSha256, signHmacSha256, secretsEqual, checkTimestamp, type SignatureCheck } from './signature';
export { orderChange, type OrderDecision, type SourceOrderState } from './ordering';
export { confluenceDocumentId, notionDocumentId, normalizeNotionId, sourcePageId } from './ids';
export { confluenceAcl } from './acl';
