import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { busContract } from '../../libs/adapters/src/bus-contract/bus-contract';
import { KafkaBus } from '../../libs/adapters/src/kafka-bus';
import { Logger, setLogLevel } from '@rag/platform';

/*
 * The bus contract (the same suite the embedded log bus runs in npm test) against a real broker
 * (RAG_KAFKA_BROKERS, default 127.0.0.1:9092): bash deploy/local/servers.sh start kafka.
 * Each test gets its own topics (a unique prefix) and groups, deleted afterwards.
 */
setLogLevel('error');
const brokers = (process.env.RAG_KAFKA_BROKERS ?? '127.0.0.1:9092').split(',').map((b) => b.trim());
const run = randomBytes(4).toString('hex');
const prefixes: string[] = [];
const admin = new Kafka({ brokers, clientId: `rag-contract-admin-${run}`, logLevel: logLevel.NOTHING }).admin();

beforeAll(async () => {
  try {
    await admin.connect();
  } catch (e) {
    throw new Error(`no Kafka broker at ${brokers.join(',')} (${e instanceof Error ? e.message : String(e)}): start one with \`bash deploy/local/servers.sh start kafka\``);
  }
});

afterAll(async () => {
  const topics = (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(p)));
  if (topics.length) await admin.deleteTopics({ topics }).catch(() => undefined);
  const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(`ct-${run}`));
  if (groups.length) await admin.deleteGroups(groups).catch(() => undefined);
  await admin.disconnect();
});

let n = 0;
busContract('KafkaBus (real broker)', {
  log: () => {
    const prefix = `ct-${run}-${++n}.`;
    prefixes.push(prefix);
    return {
      open: (p = {}) =>
        new KafkaBus({
          brokers,
          clientId: `rag-contract-${run}`,
          topicPrefix: prefix,
          partitions: 3,
          retryBaseMs: 10,
          retryMaxMs: 50,
          heartbeatIntervalMs: 500,
          sessionTimeoutMs: 10_000,
          logger: new Logger('kafka-contract'),
          ...p,
        }),
    };
  },
  // Groups are cluster-wide: one set per test (a group of an earlier test has committed on other topics).
  group: (name) => `ct-${run}-${n}-${name}`,
  drainMs: 60_000,
});
