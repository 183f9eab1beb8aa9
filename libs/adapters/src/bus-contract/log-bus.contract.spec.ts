import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger, setLogLevel } from '@rag/platform';
import { SqliteLogBus } from '../log-bus/log-bus.adapter';
import { busContract } from './bus-contract';

setLogLevel('silent');
const dir = mkdtempSync(join(tmpdir(), 'bus-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

busContract('SqliteLogBus', {
  log: () => {
    const path = join(dir, `bus-${++n}.db`);
    return {
      open: (p = {}) => new SqliteLogBus({ path, partitions: 3, retryBaseMs: 1, retryMaxMs: 5, pollMs: 20, logger: new Logger('t'), ...p }),
    };
  },
  group: (name) => name,
  drainMs: 10_000,
});
