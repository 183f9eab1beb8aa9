/**
 * The gateway's /metrics over the real SQLite registry: the outbox backlog (rag_outbox_*) while the bus is down, and
 * after the relay drained it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SqliteRegistry } from '@rag/adapters';
import { DocumentService } from '@rag/application';
import { renderMetrics } from '../../libs/services/src/core/metrics-endpoint';
import { RecordingBus } from '../fakes/recording-bus';

function gauge(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`${name} not in the metrics`);
  return Number(m[1]);
}

describe('outbox metrics', () => {
  let dir: string;
  let registry: SqliteRegistry;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-metrics-'));
    registry = new SqliteRegistry({ dir, synchronous: 'NORMAL' });
  });
  afterEach(async () => {
    vi.useRealTimers();
    await registry.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reports the changes waiting for the bus, their bytes and the oldest one\'s wait; zeros once relayed', async () => {
    const bus = new RecordingBus(Infinity); // the bus is down
    const docs = new DocumentService(registry, bus, 1024 * 1024, { relayIntervalMs: 3_600_000 });
    await docs.submit({ id: 'a', text: 'first' }, 'default');
    await docs.submit({ id: 'b', text: 'x'.repeat(5000) }, 'default');
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 600_000); // ten minutes later
    let text = await renderMetrics({ registry });
    expect(gauge(text, 'rag_outbox_messages')).toBe(2);
    expect(gauge(text, 'rag_outbox_bytes')).toBeGreaterThan(5000);
    expect(gauge(text, 'rag_outbox_oldest_age_seconds')).toBeGreaterThanOrEqual(600);
    vi.useRealTimers();
    bus.failNext = 0; // back
    await docs.relay();
    expect(bus.published.map((m) => m.key)).toEqual(['a', 'b']);
    text = await renderMetrics({ registry });
    expect([gauge(text, 'rag_outbox_messages'), gauge(text, 'rag_outbox_bytes'), gauge(text, 'rag_outbox_oldest_age_seconds')]).toEqual([0, 0, 0]);
    await docs.stopRelay();
  });
});
