// Smoke test of the real back-ends started by `bash deploy/local/servers.sh start all`.
// Not part of `npm test` (vitest.config.ts excludes test/infra); run it with
//   vitest run --config deploy/local/vitest.infra.config.ts
// after the servers are up. Addresses can be overridden with KAFKA_BROKERS, OPENSEARCH_URL,
// MILVUS_ADDRESS and MILVUS_HEALTH_URL.
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const ROOT = resolve(__dirname, '../..');
const KAFKA_BROKER = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',')[0]!.trim();
const OPENSEARCH_URL = (process.env.OPENSEARCH_URL ?? 'http://127.0.0.1:9200').replace(/\/$/, '');
const MILVUS_ADDRESS = process.env.MILVUS_ADDRESS ?? '127.0.0.1:19530';
const MILVUS_HEALTH_URL = process.env.MILVUS_HEALTH_URL ?? 'http://127.0.0.1:9091/healthz';
const HINT = 'is it running? start it with: bash deploy/local/servers.sh start all';

interface BrokerInfo {
  nodeId: number;
  host: string;
  port: number;
}

interface ProbeResult {
  brokers: BrokerInfo[];
  clusterId: string | null;
  controllerId: number;
  metadataVersion: number;
}

// The few kafkajs / Milvus SDK calls used here, typed locally so this file compiles without them.
interface KafkaJsModule {
  Kafka: new (config: { clientId: string; brokers: string[]; logLevel?: number }) => {
    admin(): {
      connect(): Promise<void>;
      disconnect(): Promise<void>;
      describeCluster(): Promise<{ brokers: BrokerInfo[]; controller: number | null; clusterId: string }>;
    };
  };
}

interface MilvusSdkModule {
  MilvusClient: new (config: { address: string; logLevel?: string }) => {
    checkHealth(): Promise<{ isHealthy: boolean }>;
    closeConnection?(): unknown;
  };
}

/** Import an optional package by a name TypeScript does not resolve; undefined when not installed. */
async function optionalImport<T>(name: string, exportName: string): Promise<T | undefined> {
  try {
    const mod = (await import(name)) as Record<string, unknown> & { default?: Record<string, unknown> };
    if (mod[exportName]) return mod as T;
    if (mod.default?.[exportName]) return mod.default as T;
    return undefined;
  } catch {
    return undefined;
  }
}

function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
}

function tcpAnswers(address: string, timeoutMs = 3000): Promise<boolean> {
  const { host, port } = splitAddress(address);
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (ok: boolean) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

async function getJson<T>(url: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: (await res.json()) as T };
}

describe('local infrastructure started by deploy/local/servers.sh', () => {
  describe(`Kafka on ${KAFKA_BROKER}`, () => {
    it('answers ApiVersions + Metadata over the wire and lists itself as broker and controller', async () => {
      expect(await tcpAnswers(KAFKA_BROKER), `nothing listens on ${KAFKA_BROKER}; ${HINT}`).toBe(true);
      const probe = resolve(ROOT, 'deploy/local/kafka-probe.mjs');
      const { stdout } = await execFileAsync(process.execPath, [probe, KAFKA_BROKER, '--timeout', '10000']);
      const result = JSON.parse(stdout) as ProbeResult;
      const { host, port } = splitAddress(KAFKA_BROKER);
      expect(result.brokers).toContainEqual(expect.objectContaining({ host, port }));
      expect(result.brokers.map((b) => b.nodeId)).toContain(result.controllerId);
      expect(result.clusterId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    });

    it('describes the cluster through kafkajs (skipped when kafkajs is not installed)', async (ctx) => {
      const kafkajs = await optionalImport<KafkaJsModule>('kafkajs', 'Kafka');
      if (!kafkajs) {
        ctx.skip();
        return;
      }
      const admin = new kafkajs.Kafka({ clientId: 'rag-infra-smoke', brokers: [KAFKA_BROKER], logLevel: 0 }).admin();
      await admin.connect();
      try {
        const cluster = await admin.describeCluster();
        expect(cluster.brokers.length).toBeGreaterThan(0);
        expect(cluster.controller).not.toBeNull();
      } finally {
        await admin.disconnect();
      }
    });
  });

  describe(`OpenSearch on ${OPENSEARCH_URL}`, () => {
    it('is a 2.19 node whose cluster health is at least yellow', async () => {
      expect(await tcpAnswers(new URL(OPENSEARCH_URL).host), `nothing listens on ${OPENSEARCH_URL}; ${HINT}`).toBe(true);
      const info = await getJson<{ version: { distribution?: string; number: string } }>(`${OPENSEARCH_URL}/`);
      expect(info.status).toBe(200);
      expect(info.body.version.distribution).toBe('opensearch');
      expect(info.body.version.number).toMatch(/^2\.19\./);
      const health = await getJson<{ status: string; number_of_nodes: number }>(
        `${OPENSEARCH_URL}/_cluster/health?wait_for_status=yellow&timeout=30s`,
      );
      expect(health.status).toBe(200);
      expect(['green', 'yellow']).toContain(health.body.status);
      expect(health.body.number_of_nodes).toBe(1);
    });

    it('indexes a document and finds it with a BM25 match query', async () => {
      const index = `rag-infra-smoke-${process.pid}-${Date.now()}`;
      const json = { 'content-type': 'application/json' };
      try {
        const created = await getJson<{ acknowledged: boolean }>(`${OPENSEARCH_URL}/${index}`, {
          method: 'PUT',
          headers: json,
          body: JSON.stringify({
            settings: { number_of_shards: 1, number_of_replicas: 0 },
            mappings: { properties: { text: { type: 'text' }, tenant: { type: 'keyword' } } },
          }),
        });
        expect(created.body.acknowledged).toBe(true);
        const put = await fetch(`${OPENSEARCH_URL}/${index}/_doc/1?refresh=true`, {
          method: 'PUT',
          headers: json,
          body: JSON.stringify({ text: 'Reciprocal rank fusion merges dense and keyword results', tenant: 'default' }),
        });
        expect(put.status).toBe(201);
        const search = await getJson<{ hits: { hits: Array<{ _id: string; _score: number }> } }>(
          `${OPENSEARCH_URL}/${index}/_search`,
          {
            method: 'POST',
            headers: json,
            body: JSON.stringify({
              query: { bool: { must: { match: { text: 'keyword fusion' } }, filter: { term: { tenant: 'default' } } } },
            }),
          },
        );
        expect(search.body.hits.hits.map((h) => h._id)).toEqual(['1']);
        expect(search.body.hits.hits[0]!._score).toBeGreaterThan(0);
      } finally {
        await fetch(`${OPENSEARCH_URL}/${index}`, { method: 'DELETE' }).catch(() => undefined);
      }
    });
  });

  describe(`Milvus on ${MILVUS_ADDRESS}`, () => {
    it('reports healthy on /healthz and accepts connections on its gRPC port', async () => {
      const res = await fetch(MILVUS_HEALTH_URL, { signal: AbortSignal.timeout(10_000) }).catch((err: Error) => {
        throw new Error(`${MILVUS_HEALTH_URL} did not answer (${err.message}); ${HINT}`);
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('OK');
      expect(await tcpAnswers(MILVUS_ADDRESS), `nothing listens on ${MILVUS_ADDRESS}`).toBe(true);
    });

    it('answers CheckHealth over gRPC (skipped when @zilliz/milvus2-sdk-node is not installed)', async (ctx) => {
      const sdk = await optionalImport<MilvusSdkModule>('@zilliz/milvus2-sdk-node', 'MilvusClient');
      if (!sdk) {
        ctx.skip();
        return;
      }
      const client = new sdk.MilvusClient({ address: MILVUS_ADDRESS, logLevel: 'error' });
      try {
        expect((await client.checkHealth()).isHealthy).toBe(true);
      } finally {
        client.closeConnection?.();
      }
    });
  });
});
