import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { z } from 'zod';
import { Topic } from '@rag/contracts';
import { metrics } from '@rag/platform';

/** The counters the console's Overview shows, summed over their labels as named here. */
export type OverviewCounters = Record<'answered' | 'refused' | 'feedback_up' | 'feedback_down' | 'index_events' | 'dead_letters', number>;

interface Sample {
  at: number;
  values: OverviewCounters;
}

/**
 * Deltas of monotonic counters over a sliding window (default one hour): samples are taken every `everyMs`; the
 * summary is the current reading minus the oldest sample inside the window (or the first sample, when the process is
 * younger than the window), with the seconds that span actually covers. A counter that went down (a reset) counts
 * from zero.
 */
export class CounterWindow {
  private readonly samples: Sample[] = [];

  constructor(private readonly windowMs = 3_600_000) {}

  add(at: number, values: OverviewCounters): void {
    this.samples.push({ at, values });
    // Keep one sample at or before the window's start, so the full hour stays covered.
    while (this.samples.length > 2 && this.samples[1]!.at <= at - this.windowMs) this.samples.shift();
  }

  summary(now: number, current: OverviewCounters): { window_s: number; counts: OverviewCounters } {
    const base = this.samples.find((s) => s.at >= now - this.windowMs) ?? this.samples[this.samples.length - 1];
    const counts = { ...current };
    if (base) for (const k of Object.keys(counts) as (keyof OverviewCounters)[]) counts[k] = current[k] >= base.values[k] ? current[k] - base.values[k] : current[k];
    return { window_s: base ? Math.round((now - base.at) / 1000) : 0, counts };
  }
}

const sum = async (c: { get(): Promise<{ values: { value: number; labels: Record<string, string | number | undefined> }[] }> }, match: Record<string, string> = {}) =>
  (await c.get()).values.filter((v) => Object.entries(match).every(([k, want]) => v.labels[k] === want)).reduce((a, v) => a + v.value, 0);

/** Reads the overview counters from the process's Prometheus registry (the same numbers /metrics exposes). */
export async function readOverviewCounters(): Promise<OverviewCounters> {
  return {
    answered: await sum(metrics.answers, { outcome: 'answered' }),
    refused: await sum(metrics.answers, { outcome: 'refused' }),
    feedback_up: await sum(metrics.feedback, { rating: 'up' }),
    feedback_down: await sum(metrics.feedback, { rating: 'down' }),
    // Index events (indexed / failed / deleted) the registry projection consumed: documents that finished ingestion.
    index_events: await sum(metrics.messages, { stage: 'registry', topic: Topic.IndexEvents, outcome: 'ok' }),
    dead_letters: await sum(metrics.dlq),
  };
}

/** Samples the overview counters once a minute while the gateway runs. */
@Injectable()
export class OverviewSampler implements OnModuleInit, OnModuleDestroy {
  readonly window = new CounterWindow();
  private timer: NodeJS.Timeout | undefined;

  async onModuleInit(): Promise<void> {
    await this.sample();
    this.timer = setInterval(() => void this.sample().catch(() => undefined), 60_000);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  async summary(): Promise<{ window_s: number; counts: OverviewCounters }> {
    return this.window.summary(Date.now(), await readOverviewCounters());
  }

  private async sample(): Promise<void> {
    this.window.add(Date.now(), await readOverviewCounters());
  }
}

/** Where `rag eval` leaves its latest report, inside a data folder. */
export const evalReportPath = (dataDir: string) => join(dataDir, 'eval', 'latest.json');

export type EvalReport = { finished_at: string; dataset: string; results: Record<string, unknown>[] };

/** Writes the latest `rag eval` report of a data folder atomically (a reader never sees half a file). */
export function writeLatestEval(dataDir: string, report: EvalReport): void {
  const file = evalReportPath(dataDir);
  mkdirSync(join(dataDir, 'eval'), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(report, null, 2) + '\n');
  renameSync(tmp, file);
}

const EvalReportSchema = z.object({
  finished_at: z.string(),
  dataset: z.string(),
  results: z.array(z.record(z.string(), z.unknown())).max(16),
});

export type EvalSummary = { finished_at: string; dataset: string; results: Record<string, number | string>[] } | { error: string };


/**
 * The latest `rag eval` report (RAG_DATA_DIR/eval/latest.json, written by the CLI): each mode's numbers and strings
 * (metrics, mode, embedder); null when no evaluation has run against this data folder, `{error}` when the file is not
 * a report.
 */
export async function readLatestEval(dataDir: string): Promise<EvalSummary | null> {
  let text: string;
  try {
    text = await readFile(evalReportPath(dataDir), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return { error: `cannot read the eval report: ${(e as Error).message}` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { error: 'the eval report is not JSON' };
  }
  const r = EvalReportSchema.safeParse(parsed);
  if (!r.success) return { error: `the eval report is not one written by \`rag eval\`: ${r.error.issues[0]?.message ?? 'invalid'}` };
  return {
    finished_at: r.data.finished_at,
    dataset: r.data.dataset,
    results: r.data.results.map((m) => Object.fromEntries(Object.entries(m).filter((e): e is [string, number | string] => typeof e[1] === 'number' || typeof e[1] === 'string'))),
  };
}
