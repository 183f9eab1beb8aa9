export { MilvusVectorStore, milvusCollectionName, MILVUS_MAX_TOPK } from './milvus.adapter';
export type { MilvusVectorStoreOptions, MilvusIndexType, MilvusConsistencyLevel, MilvusClientLike } from './milvus.adapter';
export { buildMilvusExpr, milvusScopeExpr, milvusDocumentExpr, escapeMilvusString, milvusString, milvusNumber, milvusStringList } from './milvus-expr';
