import 'reflect-metadata';
import { Controller, Inject, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, metrics, setLogLevel } from '@rag/platform';
import { BUS, NonRetryableError, type Bus, type BusMessage, type MessageBroker } from '@rag/ports';
import { FakeKafka } from '../kafka-bus/fake-kafka';
import { KafkaBus } from '../kafka-bus/kafka-bus.adapter';
import { SqliteLogBus } from '../log-bus/log-bus.adapter';
import { ValidatingBus } from './bus-client';
import { BUS_TRANSPORT, BusContext } from './bus-server';
import { connectBusTransport } from './connect-bus-transport';

/*
 * The bus as a Nest transport: @EventPattern controllers consume through connectBusTransport with the bus's
 * delivery rules (the real log bus here; Kafka runs the same strategy code in KafkaTransport).
 */
setLogLevel('silent');

const seen: { group: string; key: string; attempt: number; offset: number }[] = [];
const calls = new Map<string, number>();

@Controller()
class ChunkerLikeController {
  @EventPattern(Topic.Documents, BUS_TRANSPORT, { group: 'chunker' })
  handle(@Payload() msg: BusMessage, @Ctx() ctx: BusContext): void {
    calls.set(msg.key, (calls.get(msg.key) ?? 0) + 1);
    expect(ctx.getMessage()).toBe(msg);
    if (msg.key === 'invalid') throw new NonRetryableError('invalid document event: document: Required');
    if (msg.key === 'flaky' && msg.attempt < 2) throw new Error('flaky store');
    seen.push({ group: 'chunker', key: msg.key, attempt: msg.attempt, offset: msg.offset });
  }
}

/** A second group on the same topic in the same process: Nest chains such handlers; each must run on its own. */
@Controller()
class AuditController {
  @EventPattern(Topic.Documents, BUS_TRANSPORT, { group: 'audit' })
  async handle(@Payload() msg: BusMessage): Promise<void> {
    seen.push({ group: 'audit', key: msg.key, attempt: msg.attempt, offset: msg.offset });
  }

  /** Another transport's handler (as the embedder's @GrpcMethod): not the bus's business. */
  @MessagePattern({ service: 'Embedder', rpc: 'Embed' }, Transport.GRPC)
  embed(): string {
    return 'not on the bus';
  }
}

@Controller()
class DeadLetterController {
  readonly dead: BusMessage[] = [];
  @EventPattern(Topic.Dlq, BUS_TRANSPORT, { group: 'registry-dlq' })
  handle(@Payload() msg: BusMessage): void {
    this.dead.push(msg);
  }
}

async function appWith(controllers: (new (...a: never[]) => unknown)[], bus: Bus): Promise<INestApplication> {
  @Module({ controllers, providers: [{ provide: BUS, useValue: bus }] })
  class TestModule {}
  const app = await NestFactory.create(TestModule, { logger: false, abortOnError: false });
  await app.init();
  return app;
}

// The same controllers over both buses: the embedded log, and Kafka's own transport (KafkaTransport) over the
// in-memory kafkajs stand-in.
const brokers: [string, () => MessageBroker][] = [
  ['SqliteLogBus', () => new SqliteLogBus({ path: ':memory:', partitions: 2, maxAttempts: 3, retryBaseMs: 1, retryMaxMs: 2, pollMs: 20, logger: new Logger('t'), batchDocs: 64 })],
  ['KafkaBus', () => new KafkaBus({ brokers: ['unused:9092'], kafka: new FakeKafka(), partitions: 2, maxAttempts: 3, retryBaseMs: 1, retryMaxMs: 2, logger: new Logger('t') })],
];

describe.each(brokers)('connectBusTransport over %s (the bus as a Nest microservice transport)', (_name, openBroker) => {
  let app: INestApplication | undefined;
  let bus: ValidatingBus;
  beforeEach(() => {
    seen.length = 0;
    calls.clear();
    bus = new ValidatingBus(openBroker());
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await bus.close();
  });

  it('runs every @EventPattern handler in its own consumer group with the bus’s retries, and hands the bus the original error', async () => {
    app = await appWith([ChunkerLikeController, AuditController, DeadLetterController], bus);
    await connectBusTransport(app);
    const before = (await metrics.messages.get()).values.find((v) => v.labels.stage === 'chunker' && v.labels.outcome === 'error')?.value ?? 0;
    await bus.broker.publish(Topic.Documents, [
      { key: 'ok', value: { n: 1 } },
      { key: 'flaky', value: { n: 2 } },
      { key: 'invalid', value: { n: 3 }, headers: { 'x-own': 'kept' } },
    ]);
    await bus.drain(10_000);

    expect(seen.filter((s) => s.group === 'chunker').map((s) => [s.key, s.attempt]).sort()).toEqual([
      ['flaky', 2],
      ['ok', 1],
    ]);
    expect(seen.filter((s) => s.group === 'audit').map((s) => s.key).sort()).toEqual(['flaky', 'invalid', 'ok']);
    // The NonRetryableError reached the bus as itself (Nest's default filter would have turned it into
    // "Internal server error" and the bus would have retried it maxAttempts times).
    expect(calls.get('invalid')).toBe(1);
    const dead = app.get(DeadLetterController).dead;
    expect(dead.map((d) => [d.key, d.headers[DLQ_HEADERS.reason], d.headers[DLQ_HEADERS.stage], d.headers[DLQ_HEADERS.attempts], d.headers['x-own']])).toEqual([
      ['invalid', 'invalid document event: document: Required', 'chunker', '1', 'kept'],
    ]);
    const after = (await metrics.messages.get()).values.find((v) => v.labels.stage === 'chunker' && v.labels.outcome === 'error')?.value ?? 0;
    expect(after - before).toBe(2); // flaky's first attempt and the invalid one
  });

  it('is idempotent: startAllMicroservices (another transport starting) does not subscribe the handlers twice', async () => {
    app = await appWith([AuditController], bus);
    await connectBusTransport(app);
    await app.startAllMicroservices();
    await bus.broker.publish(Topic.Documents, [{ key: 'once', value: {} }]);
    await bus.drain(10_000);
    expect(seen.map((s) => s.key)).toEqual(['once']);
  });

  it('can be started again after the broker refused to start (the subscriptions are made once)', async () => {
    const broker = openBroker();
    let refusals = 1;
    const flaky: MessageBroker = {
      publish: (t, m) => broker.publish(t, m),
      subscribe: (o) => broker.subscribe(o),
      start: async () => {
        if (refusals-- > 0) throw new Error('broker unavailable');
        await broker.start();
      },
      drain: (ms) => broker.drain(ms),
      lag: () => broker.lag(),
      close: () => broker.close(),
    };
    await bus.close();
    bus = new ValidatingBus(flaky);
    app = await appWith([AuditController], bus);
    await expect(connectBusTransport(app)).rejects.toThrow(/broker unavailable/);
    await app.startAllMicroservices();
    await broker.publish(Topic.Documents, [{ key: 'after-retry', value: {} }]);
    await bus.drain(10_000);
    expect(seen.map((s) => s.key)).toEqual(['after-retry']);
  });

  it('refuses a request-response handler on the bus, and a handler without its consumer group, with a message that says what to write', async () => {
    @Controller()
    class RequestResponse {
      @MessagePattern(Topic.Chunks)
      ask(): string {
        return 'no';
      }
    }
    app = await appWith([RequestResponse], bus);
    await expect(connectBusTransport(app)).rejects.toThrow(/events only.*@EventPattern/);
    await app.close();
    await bus.close();
    bus = new ValidatingBus(openBroker());

    @Controller()
    class NoGroup {
      @EventPattern(Topic.Chunks, BUS_TRANSPORT)
      handle(): void {}
    }
    app = await appWith([NoGroup], bus);
    await expect(connectBusTransport(app)).rejects.toThrow(/needs its consumer group/);
  });

  it('refuses a pattern that is not a topic', async () => {
    @Controller()
    class Typo {
      @EventPattern('rag.documnets.v1', BUS_TRANSPORT, { group: 'chunker' })
      handle(): void {}
    }
    app = await appWith([Typo], bus);
    await expect(connectBusTransport(app)).rejects.toThrow(/rag\.documnets\.v1 is not a topic/);
  });

  it('runs a batch handler (extras batch: true) through Nest with arrays of messages; a failed one is delivered again alone', async () => {
    const batches: string[][] = [];
    @Controller()
    class BatchController {
      @EventPattern(Topic.ChunksEmbedded, BUS_TRANSPORT, { group: 'indexer', batch: true })
      async handle(@Payload() msgs: BusMessage[]): Promise<(Error | undefined)[]> {
        batches.push(msgs.map((m) => m.key));
        return msgs.map((m) => (m.key === 'invalid' ? new NonRetryableError('invalid embedded chunks event') : m.key === 'flaky' && m.attempt < 2 && msgs.length === 1 ? new Error('store hiccup') : undefined));
      }
    }
    app = await appWith([BatchController, DeadLetterController], bus);
    await connectBusTransport(app);
    const keys = ['a', 'b', 'invalid', 'c', 'flaky', 'd'];
    await bus.broker.publish(Topic.ChunksEmbedded, keys.map((key) => ({ key, value: { key } })));
    await bus.drain(10_000);
    const handled = batches.flat();
    for (const k of ['a', 'b', 'c', 'd', 'flaky']) expect(handled.filter((h) => h === k).length, k).toBeGreaterThanOrEqual(1);
    // Only the invalid message went to the DLQ (once, attempts counted on its own delivery); every other got through.
    const dead = app.get(DeadLetterController).dead;
    expect(dead.map((d) => [d.key, d.headers[DLQ_HEADERS.reason], d.headers[DLQ_HEADERS.stage], d.headers[DLQ_HEADERS.attempts]])).toEqual([
      ['invalid', 'invalid embedded chunks event', 'indexer', '1'],
    ]);
    expect(batches.every((b) => new Set(b).size === b.length)).toBe(true);
    // Both buses hand runs of several messages to one call (the log bus with batchDocs, as RAG_INGEST_BATCH_DOCS sets it).
    expect(Math.max(...batches.map((b) => b.length))).toBeGreaterThan(1);
  });

  it('keeps a stage handler’s dependencies injected (controllers are ordinary Nest providers)', async () => {
    @Controller()
    class Injected {
      constructor(@Inject(BUS) readonly injected: Bus) {}
      @EventPattern(Topic.IndexEvents, BUS_TRANSPORT, { group: 'registry' })
      async handle(@Payload() msg: BusMessage): Promise<void> {
        seen.push({ group: 'registry', key: msg.key, attempt: msg.attempt, offset: msg.offset });
      }
    }
    app = await appWith([Injected], bus);
    await connectBusTransport(app);
    expect(app.get(Injected).injected).toBe(bus);
    await bus.broker.publish(Topic.IndexEvents, [{ key: 'doc', value: {} }]);
    await bus.drain(10_000);
    expect(seen.map((s) => [s.group, s.key])).toEqual([['registry', 'doc']]);
  });
});
