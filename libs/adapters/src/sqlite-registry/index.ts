export { SqliteRegistry } from './sqlite-registry.adapter';
export type { SqliteRegistryOptions } from './sqlite-registry.adapter';
