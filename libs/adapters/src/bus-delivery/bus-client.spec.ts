import { lastValueFrom } from 'rxjs';
import { Topic, type IndexEvent } from '@rag/contracts';
import { Logger, setLogLevel } from '@rag/platform';
import { NonRetryableError, type BusMessage } from '@rag/ports';
import { SqliteLogBus } from '../log-bus/log-bus.adapter';
import { BusClient, ValidatingBus } from './bus-client';

setLogLevel('silent');

const event = (over: Partial<IndexEvent> = {}): IndexEvent => ({
  event_id: 'e1',
  document_id: 'upload:1',
  tenant: 'default',
  version: 1,
  status: 'indexed',
  stage: 'indexer',
  at: '2026-01-01T00:00:00.000Z',
  ...over,
});

describe('ValidatingBus and BusClient (typed publishing, validated on the way out)', () => {
  let broker: SqliteLogBus;
  let got: BusMessage[];
  beforeEach(async () => {
    broker = new SqliteLogBus({ path: ':memory:', partitions: 2, retryBaseMs: 1, pollMs: 20, logger: new Logger('t') });
    got = [];
    await broker.subscribe({ group: 'g', topic: Topic.IndexEvents, stage: 'g', handler: async (m) => void got.push(m) });
    await broker.start();
  });
  afterEach(() => broker.close());

  it('publishes a value that matches its topic’s schema, as it is', async () => {
    const bus = new ValidatingBus(broker);
    await bus.publish(Topic.IndexEvents, [{ key: 'upload:1', value: event(), headers: { 'x-own': 'kept' } }]);
    await bus.drain(5_000);
    expect(got.map((m) => [m.key, m.value, m.headers['x-own']])).toEqual([['upload:1', event(), 'kept']]);
  });

  it('refuses an invalid value with a NonRetryableError naming the topic, the key and the problems, and publishes nothing of the batch', async () => {
    const bus = new ValidatingBus(broker);
    const bad = { ...event(), status: 'done' } as unknown as IndexEvent;
    const err = await bus.publish(Topic.IndexEvents, [{ key: 'upload:1', value: event() }, { key: 'upload:2', value: bad }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NonRetryableError);
    expect((err as Error).message).toMatch(/invalid rag\.index\.events\.v1 message \(key upload:2\): status: /);
    await bus.drain(5_000);
    expect(got).toEqual([]);
  });

  it('lets anything onto the DLQ topic (dead letters are whatever failed)', async () => {
    const bus = new ValidatingBus(broker);
    await expect(bus.publish(Topic.Dlq, [{ key: 'k', value: 'not json at all' }])).resolves.toBeUndefined();
  });

  it('BusClient.emit publishes one validated event; send (request-response) is refused', async () => {
    const client = new BusClient(broker);
    await lastValueFrom(client.emit(Topic.IndexEvents, { key: 'upload:3', value: event({ document_id: 'upload:3' }) }), { defaultValue: undefined });
    await broker.drain(5_000);
    expect(got.map((m) => m.key)).toEqual(['upload:3']);
    await expect(lastValueFrom(client.emit(Topic.IndexEvents, { key: 'x', value: { nope: true } }))).rejects.toThrow(/invalid rag\.index\.events\.v1/);
    await expect(lastValueFrom(client.send(Topic.IndexEvents, {}))).rejects.toThrow(/events only/);
    expect(client.unwrap()).toBe(broker);
  });
});
