import { AppError } from '@rag/platform';
import { NonRetryableError } from '@rag/ports';
import type { BusMessage } from '@rag/ports';
import { Topic } from '@rag/contracts';
import { backoffMs, deliverWithRetries } from '../bus-delivery';
import { decodeHeaders, decodeValue, nextOffset, partitionLag } from './delivery';

const base: Omit<BusMessage, 'attempt'> = { topic: Topic.Chunks, partition: 0, offset: 7, key: 'doc', value: { a: 1 }, headers: {} };
const policy = { maxAttempts: 4, retryBaseMs: 100, retryMaxMs: 250 };

describe('deliverWithRetries', () => {
  it('returns done on the first success, numbering attempts from 1', async () => {
    const attempts: number[] = [];
    const out = await deliverWithRetries(async (m) => void attempts.push(m.attempt), base, policy, { sleep: async () => undefined, isClosing: () => false });
    expect(out).toEqual({ kind: 'done', attempts: 1 });
    expect(attempts).toEqual([1]);
  });

  it('retries with capped exponential backoff, then dead-letters with the last reason', async () => {
    const sleeps: number[] = [];
    const seen: number[] = [];
    const out = await deliverWithRetries(
      async (m) => {
        seen.push(m.attempt);
        throw new Error(`fail ${m.attempt}`);
      },
      base,
      policy,
      { sleep: async (ms) => void sleeps.push(ms), isClosing: () => false },
    );
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(sleeps).toEqual([100, 200, 250]);
    expect(out).toEqual({ kind: 'dead', attempts: 4, reason: 'fail 4', nonRetryable: false });
  });

  it('recovers when a retry succeeds', async () => {
    const out = await deliverWithRetries(
      async (m) => {
        if (m.attempt < 3) throw new Error('transient');
      },
      base,
      policy,
      { sleep: async () => undefined, isClosing: () => false },
    );
    expect(out).toEqual({ kind: 'done', attempts: 3 });
  });

  it('keeps retrying a store outage (unavailable / deadline_exceeded) past maxAttempts until the transient budget is spent', async () => {
    let clock = 0;
    const hooks = { sleep: async (ms: number) => void (clock += ms), isClosing: () => false, now: () => clock };
    // Down for 20 deliveries (well past maxAttempts = 4), then back: delivered, nothing dead-lettered.
    const recovered = await deliverWithRetries(
      async (m) => {
        if (m.attempt <= 20) throw new AppError(m.attempt % 2 ? 'unavailable' : 'deadline_exceeded', 'milvus down');
      },
      base,
      { ...policy, transientRetryMs: 60_000 },
      hooks,
    );
    expect(recovered).toEqual({ kind: 'done', attempts: 21 });

    // Never back: dead-lettered once the budget is spent, with the store's reason.
    clock = 0;
    const dead = await deliverWithRetries(
      async () => {
        throw new AppError('unavailable', 'opensearch down');
      },
      base,
      { ...policy, transientRetryMs: 5_000 },
      hooks,
    );
    expect(dead).toMatchObject({ kind: 'dead', reason: 'opensearch down', nonRetryable: false });
    expect(clock).toBeGreaterThanOrEqual(5_000);

    // Without a budget an outage counts like any failure.
    const bounded = await deliverWithRetries(async () => {
      throw new AppError('unavailable', 'down');
    }, base, policy, hooks);
    expect(bounded).toMatchObject({ kind: 'dead', attempts: 4 });
  });

  it('counts only non-transient failures against maxAttempts', async () => {
    const out = await deliverWithRetries(
      async (m) => {
        if (m.attempt % 2) throw new AppError('unavailable', 'flapping store');
        throw new Error(`bad ${m.attempt}`);
      },
      base,
      { ...policy, transientRetryMs: 60_000 },
      { sleep: async () => undefined, isClosing: () => false },
    );
    expect(out).toMatchObject({ kind: 'dead', attempts: 8, reason: 'bad 8' });
  });

  it('sends a NonRetryableError to the DLQ at once', async () => {
    let calls = 0;
    const out = await deliverWithRetries(
      async () => {
        calls++;
        throw new NonRetryableError('bad payload');
      },
      base,
      policy,
      { sleep: async () => undefined, isClosing: () => false },
    );
    expect(calls).toBe(1);
    expect(out).toEqual({ kind: 'dead', attempts: 1, reason: 'bad payload', nonRetryable: true });
  });

  it('stops without dead-lettering when the bus closes during a retry', async () => {
    let closing = false;
    const out = await deliverWithRetries(
      async () => {
        throw new Error('down');
      },
      base,
      policy,
      {
        sleep: async () => {
          closing = true;
        },
        isClosing: () => closing,
      },
    );
    expect(out).toEqual({ kind: 'aborted', attempts: 1 });
  });
});

describe('kafka codec helpers', () => {
  it('computes backoff', () => {
    expect([1, 2, 3, 4, 10].map((a) => backoffMs(a, { retryBaseMs: 200, retryMaxMs: 1000 }))).toEqual([200, 400, 800, 1000, 1000]);
  });

  it('decodes headers and values', () => {
    expect(decodeHeaders({ a: Buffer.from('x'), b: 'y', c: [Buffer.from('1'), '2'], d: undefined })).toEqual({ a: 'x', b: 'y', c: '2' });
    expect(decodeHeaders(undefined)).toEqual({});
    expect(decodeValue(Buffer.from('{"n":1}'))).toEqual({ n: 1 });
    expect(decodeValue(Buffer.from('not json'))).toBe('not json');
    expect(decodeValue(null)).toBeNull();
  });

  it('commits the next offset, beyond 2^53 too', () => {
    expect(nextOffset('0')).toBe('1');
    expect(nextOffset('9007199254740993')).toBe('9007199254740994');
  });

  it('computes partition lag from watermarks and the committed offset', () => {
    expect(partitionLag({ high: '10', low: '0', committed: '4' })).toBe(6);
    expect(partitionLag({ high: '10', low: '3', committed: '-1' })).toBe(7);
    expect(partitionLag({ high: '10', low: '3', committed: null })).toBe(7);
    expect(partitionLag({ high: '10', low: '8', committed: '5' })).toBe(2);
    expect(partitionLag({ high: '10', low: '0', committed: '10' })).toBe(0);
  });
});
