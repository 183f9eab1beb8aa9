export { OffloadedKeywordWrites, type OffloadedKeywordWritesOptions } from './offloaded-keyword-writes.adapter';
