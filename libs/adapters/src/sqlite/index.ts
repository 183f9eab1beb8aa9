export { StoreCorruptError, StoreOpenError, RESTORE_ADVICE, isCorruptionCode, observedCorruption } from './store-error';
export { SqliteStoreInspector, embeddedStoreFiles, EXPECTED_SCHEMAS, type StoreFileTarget } from './sqlite-store-inspector';
