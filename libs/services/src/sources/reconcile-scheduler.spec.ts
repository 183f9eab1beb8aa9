import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SourceReconciler } from '@rag/application';
import type { AppConfig } from '@rag/platform';
import type { LeaderElection, SourceConnector, SourceStateStore } from '@rag/ports';
import { ReconcileScheduler } from './sources.module';

// Issue 14 item 3: with several gateway replicas exactly one (the leader) runs the scheduled reconciliation; a follower
// that becomes the leader (the old one died) starts running passes within RAG_LEADER_POLL_MS.
describe('ReconcileScheduler leadership', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const make = (leader: { v: boolean }) => {
    const runOnce = vi.fn(async () => []);
    const election: LeaderElection = { start: vi.fn(async () => undefined), isLeader: () => leader.v, close: vi.fn(async () => undefined) };
    // (Cast: the parameters after the leader election belong to other features of the scheduler.)
    const args = [
      { runOnce } as unknown as SourceReconciler,
      { RAG_RECONCILE_INTERVAL_S: 60, RAG_LEADER_POLL_MS: 500 } as AppConfig,
      [{} as SourceConnector],
      { close: vi.fn(async () => undefined) } as unknown as SourceStateStore,
      election,
      { reconciled: vi.fn() },
    ] as unknown as ConstructorParameters<typeof ReconcileScheduler>;
    const scheduler = new ReconcileScheduler(...args);
    return { scheduler, runOnce, election };
  };

  it('runs passes only while this replica leads, and takes over within the poll interval when it becomes the leader', async () => {
    const leader = { v: false };
    const { scheduler, runOnce, election } = make(leader);
    await scheduler.onApplicationBootstrap();
    expect(election.start).toHaveBeenCalledOnce();
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(runOnce).not.toHaveBeenCalled();
    leader.v = true;
    await vi.advanceTimersByTimeAsync(500);
    expect(runOnce).toHaveBeenCalledOnce();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(runOnce).toHaveBeenCalledTimes(2);
    // Losing the lock (the connection died) stops the passes at once.
    leader.v = false;
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    expect(runOnce).toHaveBeenCalledTimes(2);
    await scheduler.onApplicationShutdown();
    expect(election.close).toHaveBeenCalledOnce();
  });
});
