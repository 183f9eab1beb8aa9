import { chunkId, type Chunk } from './document';

/**
 * The one chunk factory of the tests (adapters, application, services): a searchable child chunk whose document,
 * version and ordinal come from its id (`<document>#v<version>#<ordinal>`, as chunkId builds it), every other field a neutral default (tenant `t`,
 * readable by everyone, no title, headings or metadata), `over` last. Suites with other defaults wrap it.
 */
export function testChunk(id = 'd#v1#0', over: Partial<Chunk> = {}): Chunk {
  const m = /^(.+)#v(\d+)#(\d+)$/.exec(id);
  if (!m) throw new Error(`a test chunk id is <document>#v<version>#<ordinal>, got "${id}"`);
  return {
    chunk_id: id,
    document_id: m[1]!,
    tenant: 't',
    version: Number(m[2]),
    ordinal: Number(m[3]),
    kind: 'child',
    parent_id: null,
    acl: ['*'],
    title: '',
    heading_path: [],
    metadata: {},
    text: 'text',
    token_count: 1,
    ...over,
  };
}

/** testChunk by parts: the chunk `ordinal` of `document` at `version`. */
export const testChunkOf = (document: string, version: number, ordinal: number, over: Partial<Chunk> = {}): Chunk =>
  testChunk(chunkId(document, version, ordinal), over);
