/**
 * A real Prometheus scrapes the eight running services (separate processes over Kafka, gRPC, Milvus and OpenSearch;
 * `npm run infra:up` first) and answers PromQL: the P99 of every query and ingestion stage from
 * rag_stage_duration_seconds, plus the other series of the catalogue (HTTP requests by route and status, bus
 * messages, consumer lag, documents by status, answers, process metrics).
 *
 * The binary: .local/tools/bin/prometheus (deploy/tools/install.sh), else `prometheus` on PATH (Debian package
 * `prometheus`). It runs on a free port with a generated config (1 s scrape interval) and its data in a temp folder.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STAGES } from '@rag/platform';
import { call, doc, GATEWAY, root, services, useDistributedPlatform, waitAll } from './distributed-harness';

function prometheusBinary(): string {
  const local = join(root, '.local/tools/bin/prometheus');
  if (existsSync(local)) return local;
  const which = spawnSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
  throw new Error('Prometheus not found: run `bash deploy/tools/install.sh` (puts it in .local/tools/bin/) or install the Debian package `prometheus`');
}

const PROM_PORT = GATEWAY + 21;
const PROM = `http://127.0.0.1:${PROM_PORT}`;
const SCRAPE_SECONDS = 1;
const promDir = mkdtempSync(join(tmpdir(), 'rag-prom-'));
let prometheus: ChildProcess | undefined;
let promLog = '';

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

async function promQuery(q: string): Promise<Sample[]> {
  const res = await fetch(`${PROM}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = (await res.json()) as { status: string; error?: string; data?: { resultType: string; result: Sample[] } };
  if (body.status !== 'success') throw new Error(`PromQL ${q}: ${body.error ?? res.status}`);
  return body.data!.result;
}

/** Waits until Prometheus has scraped every target at least `scrapes` more times. */
async function scrapes(n: number): Promise<void> {
  await new Promise((r) => setTimeout(r, (n * SCRAPE_SECONDS + 0.5) * 1000));
}

async function workload(round: number): Promise<void> {
  const ids = [1, 2].map((i) => round * 10 + i);
  const r = await call<{ accepted: unknown[] }>('POST', '/v1/documents:batch', { documents: ids.map(doc) });
  expect(r.body.accepted).toHaveLength(ids.length);
  await waitAll(ids.map((i) => `doc-${i}`), 'indexed');
  let traceId = '';
  for (const i of ids) {
    const q = await call<{ trace_id: string }>('POST', '/v1/query', { question: `Which Mach number was model number ${i} tested at?`, rerank: true });
    expect(q.status).toBe(200);
    traceId = q.body.trace_id;
  }
  // Feedback is accepted only on a trace the gateway issued to the caller's tenant.
  expect((await call('POST', '/v1/feedback', { trace_id: traceId, rating: 'up' })).status).toBe(202);
}

describe('Prometheus scrapes every service: P99 of each stage by PromQL', () => {
  useDistributedPlatform();

  beforeAll(async () => {
    const bin = prometheusBinary();
    const targets = services.map((s) => `'127.0.0.1:${s.port}'`);
    expect(targets).toHaveLength(8);
    const config = [
      'global:',
      `  scrape_interval: ${SCRAPE_SECONDS}s`,
      `  scrape_timeout: ${SCRAPE_SECONDS}s`,
      'scrape_configs:',
      ...services.flatMap((s) => [`  - job_name: '${s.name}'`, '    static_configs:', `      - targets: ['127.0.0.1:${s.port}']`]),
    ].join('\n');
    writeFileSync(join(promDir, 'prometheus.yml'), config + '\n');
    prometheus = spawn(
      bin,
      [
        `--config.file=${join(promDir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(promDir, 'data')}`,
        `--web.listen-address=127.0.0.1:${PROM_PORT}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    prometheus.stderr!.on('data', (d: Buffer) => (promLog = (promLog + d.toString()).slice(-4000)));
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        if ((await fetch(`${PROM}/-/ready`)).ok) break;
      } catch {
        /* starting */
      }
      if (prometheus.exitCode !== null || Date.now() > deadline) throw new Error(`Prometheus did not start: ${promLog}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }, 60_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      prometheus.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 1000));
      if (prometheus.exitCode === null) prometheus.kill('SIGKILL');
    }
    rmSync(promDir, { recursive: true, force: true });
  });

  it('scrapes all eight services and returns the P99 of every query and ingestion stage', { timeout: 240_000 }, async () => {
    // Two rounds of work with scrapes between them: each stage's histogram series exists before the second round
    // and grows during it, so rate() over the last minute is positive for every stage.
    await workload(1);
    await scrapes(3);
    await workload(2);
    await scrapes(3);

    const up = await promQuery('up');
    expect(up.map((s) => `${s.metric.job}=${s.value[1]}`).sort()).toEqual(services.map((s) => `${s.name}=1`).sort());

    const p99 = await promQuery('histogram_quantile(0.99, sum by (le, stage) (rate(rag_stage_duration_seconds_bucket[1m])))');
    const byStage = new Map(p99.map((s) => [s.metric.stage!, Number(s.value[1])]));
    console.log(`P99 by stage (s): ${JSON.stringify(Object.fromEntries([...byStage].sort()))}`);
    // Conditional stages: `agent-hop` runs only with an LLM and mode agent/auto, `corrective` only after a weak-evidence
    // refusal; this platform has no LLM and its workload asks answerable questions. agent-local.e2e checks the
    // agent-hop spans, crag.e2e the corrective retry (degraded, timings).
    const conditional = new Set<string>(['agent-hop', 'corrective']);
    for (const stage of STAGES.filter((s) => !conditional.has(s))) {
      expect(byStage.has(stage), `a P99 sample for stage ${stage}`).toBe(true);
      const v = byStage.get(stage)!;
      expect(Number.isFinite(v) && v > 0, `P99 of ${stage} is a positive number (got ${v})`).toBe(true);
    }

    // The rest of the catalogue, from the services that own it.
    const routes = await promQuery('sum by (route, status) (rag_http_requests_total{job="gateway"})');
    expect(routes.map((s) => `${s.metric.route} ${s.metric.status}`)).toEqual(expect.arrayContaining(['/v1/query 200', '/v1/documents:batch 202']));
    expect(await promQuery('histogram_quantile(0.99, sum by (le, route) (rate(rag_http_request_duration_seconds_bucket{route="/v1/query"}[1m])))')).toHaveLength(1);
    const processed = await promQuery('sum by (job, stage) (rag_bus_messages_total{outcome="ok"})');
    expect(processed.map((s) => s.metric.job)).toEqual(expect.arrayContaining(['loader', 'chunker', 'embedder', 'indexer', 'gateway']));
    const lag = await promQuery('rag_kafka_consumer_lag');
    // Every consumer group of the pipeline, including the gateway's DLQ projection (registry-dlq).
    expect(new Set(lag.map((s) => s.metric.group))).toEqual(new Set(['loader', 'chunker', 'embedder', 'indexer', 'registry', 'registry-dlq']));
    expect(lag.every((s) => s.metric.partition !== undefined)).toBe(true);
    const docs = await promQuery('rag_documents{status="indexed"}');
    expect(Number(docs[0]?.value[1])).toBeGreaterThanOrEqual(4);
    // The gateway's outbox backlog: everything accepted has been relayed.
    const outbox = await promQuery('rag_outbox_messages{job="gateway"}');
    expect(outbox.map((s) => Number(s.value[1]))).toEqual([0]);
    expect(await promQuery('rag_outbox_oldest_age_seconds{job="gateway"} == 0')).toHaveLength(1);
    expect(await promQuery('rag_answers_total{outcome="answered"}')).toHaveLength(1);
    expect(await promQuery('rag_degraded_total{part="reranker"}')).toHaveLength(1);
    expect(await promQuery('rag_feedback_total{rating="up"}')).toHaveLength(1);
    expect((await promQuery('rag_process_resident_memory_bytes')).length).toBe(8);
  });
});
