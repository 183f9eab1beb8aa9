import { Logger, setLogLevel } from '@rag/platform';
import { FakeKafka } from '../kafka-bus/fake-kafka';
import { KafkaBus } from '../kafka-bus/kafka-bus.adapter';
import { busContract } from './bus-contract';

// The real broker runs the same suite: test/infra/kafka-bus.contract.infra.spec.ts.
setLogLevel('silent');

busContract('KafkaBus (in-memory kafkajs stand-in)', {
  log: () => {
    const kafka = new FakeKafka();
    return {
      open: (p = {}) => new KafkaBus({ brokers: ['unused:9092'], kafka, partitions: 3, retryBaseMs: 1, retryMaxMs: 5, logger: new Logger('t'), ...p }),
    };
  },
  group: (name) => name,
  drainMs: 10_000,
});
