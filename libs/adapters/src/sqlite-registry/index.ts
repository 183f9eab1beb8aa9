export { SqliteRegistry } from './sqlite-registry.adapter';
export type { SqliteRegistryOptions } from './sqlite-registry.adapter';
export { SqliteSourceStateStore } from './sqlite-source-state.adapter';
