export { SqliteApiKeyStore, API_KEYS_DB_FILE } from './sqlite-api-key-store.adapter';
export type { SqliteApiKeyStoreOptions } from './sqlite-api-key-store.adapter';
