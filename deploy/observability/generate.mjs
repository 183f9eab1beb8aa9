#!/usr/bin/env node
// Writes the Prometheus rules and the Grafana dashboards of deploy/observability/ from the tables below, so the
// SLOs, their windows and the panels stay consistent with each other (35 recording rules and 4 dashboards by hand
// drift apart). The outputs are committed; test/deploy/observability.spec.ts fails when they are stale.
//
// usage: node deploy/observability/generate.mjs [--check]   (--check: exit 1 if a committed file differs)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');

// ---- SLOs -------------------------------------------------------------------------------------------------------

/** Windows of the multi-window, multi-burn-rate alerts (Google SRE workbook, "Alerting on SLOs", table 5-8). */
export const WINDOWS = ['5m', '30m', '1h', '2h', '6h', '1d', '3d'];

const API = 'route!~"/healthz|/readyz|/metrics"';

/**
 * Each SLO is a ratio of bad events to all events. `objective` is the good fraction, so the error budget is
 * 1 - objective. `fast`/`slow` are the burn-rate pairs that page (critical) and open a ticket (warning):
 * [long window, short window, burn-rate factor]. The quality SLOs have large budgets (20 %, 15 %), so a factor
 * above 1/budget could never fire; they use smaller factors and a minimum event count so a handful of answers or
 * votes cannot page anyone.
 */
export const SLOS = [
  {
    slo: 'retrieval-latency',
    title: 'Retrieval P99 under 2 s',
    description: '99% of retrievals (dense ∥ keyword + fusion) finish within 2 s',
    objective: 0.99,
    bad: (w) =>
      `sum(rate(rag_stage_duration_seconds_count{stage="retrieve"}[${w}])) - sum(rate(rag_stage_duration_seconds_bucket{stage="retrieve",le="2"}[${w}]))`,
    total: (w) => `sum(rate(rag_stage_duration_seconds_count{stage="retrieve"}[${w}]))`,
    alert: 'RagRetrievalLatencyBudgetBurn',
  },
  {
    slo: 'generation-latency',
    title: 'Generation P99 under 10 s',
    description: '99% of answer generations finish within 10 s',
    objective: 0.99,
    bad: (w) =>
      `sum(rate(rag_stage_duration_seconds_count{stage="generate"}[${w}])) - sum(rate(rag_stage_duration_seconds_bucket{stage="generate",le="10"}[${w}]))`,
    total: (w) => `sum(rate(rag_stage_duration_seconds_count{stage="generate"}[${w}]))`,
    alert: 'RagGenerationLatencyBudgetBurn',
  },
  {
    slo: 'availability',
    title: 'API error rate under 0.5 %',
    description: '99.5% of API requests (health and metrics excluded) answer without a 5xx',
    objective: 0.995,
    bad: (w) => `sum(rate(rag_http_requests_total{${API},status=~"5.."}[${w}]))`,
    total: (w) => `sum(rate(rag_http_requests_total{${API}}[${w}]))`,
    alert: 'RagErrorBudgetBurn',
  },
  {
    slo: 'empty-answers',
    title: 'Empty answers (refusals) under 20 %',
    description: 'at most 20% of questions are answered with a refusal (no evidence above the threshold)',
    objective: 0.8,
    bad: (w) => `sum(rate(rag_answers_total{outcome="refused"}[${w}]))`,
    total: (w) => `sum(rate(rag_answers_total[${w}]))`,
    alert: 'RagEmptyAnswerRateHigh',
    fast: [['1h', '5m', 2]],
    slow: [['6h', '30m', 1]],
    minEvents: { metric: 'rag_answers_total', window: '1h', count: 20 },
  },
  {
    slo: 'thumbs-down',
    title: 'Thumbs-down under 15 %',
    description: 'at most 15% of feedback votes are thumbs-down',
    objective: 0.85,
    bad: (w) => `sum(rate(rag_feedback_total{rating="down"}[${w}]))`,
    total: (w) => `sum(rate(rag_feedback_total[${w}]))`,
    alert: 'RagThumbsDownRateHigh',
    fast: [['1h', '5m', 2]],
    slow: [['6h', '30m', 1]],
    minEvents: { metric: 'rag_feedback_total', window: '1h', count: 20 },
  },
];

const DEFAULT_FAST = [
  ['1h', '5m', 14.4], // 2% of a 30-day budget in one hour
  ['6h', '30m', 6], // 5% in six hours
];
const DEFAULT_SLOW = [
  ['1d', '2h', 3], // 10% in a day
  ['3d', '6h', 1], // 10% in three days
];

const ratio = (w) => `rag_slo:error_ratio:rate${w}`;
const round = (x) => Number(x.toPrecision(6));

function burnCondition(s, pairs) {
  const budget = round(1 - s.objective);
  const parts = pairs.map(([long, short, factor]) => {
    const threshold = round(factor * budget);
    return `(${ratio(long)}{slo="${s.slo}"} > ${threshold} and ${ratio(short)}{slo="${s.slo}"} > ${threshold})`;
  });
  let expr = parts.join('\nor\n');
  if (s.minEvents) {
    const m = s.minEvents;
    expr = `(\n${expr}\n)\nand on() sum(increase(${m.metric}[${m.window}])) >= ${m.count}`;
  }
  return expr;
}

function recordingRules() {
  const sloRules = [];
  for (const s of SLOS) {
    sloRules.push({ record: 'rag_slo:objective', expr: String(s.objective), labels: { slo: s.slo } });
    sloRules.push({ record: 'rag_slo:error_budget', expr: String(round(1 - s.objective)), labels: { slo: s.slo } });
    for (const w of WINDOWS) {
      sloRules.push({ record: ratio(w), expr: `(${s.bad(w)})\n/\n(${s.total(w)})`, labels: { slo: s.slo } });
    }
  }
  const burn = WINDOWS.map((w) => ({
    record: `rag_slo:burn_rate:rate${w}`,
    expr: `${ratio(w)} / on(slo) rag_slo:error_budget`,
  }));
  const latency = [];
  for (const q of ['0.5', '0.95', '0.99']) {
    const name = `p${Math.round(Number(q) * 100)}`;
    latency.push({
      record: `rag:stage_duration_seconds:${name}_5m`,
      expr: `histogram_quantile(${q}, sum by (stage, le) (rate(rag_stage_duration_seconds_bucket[5m])))`,
    });
    latency.push({
      record: `rag:http_request_duration_seconds:${name}_5m`,
      expr: `histogram_quantile(${q}, sum by (route, le) (rate(rag_http_request_duration_seconds_bucket{${API}}[5m])))`,
    });
  }
  const pipeline = [
    { record: 'rag:bus_messages:rate5m', expr: 'sum by (stage, topic, outcome) (rate(rag_bus_messages_total[5m]))' },
    {
      record: 'rag:bus_messages:error_ratio_5m',
      expr: 'sum by (stage) (rate(rag_bus_messages_total{outcome="error"}[5m]))\n/\nsum by (stage) (rate(rag_bus_messages_total[5m]))',
    },
    { record: 'rag:dlq_messages:increase10m', expr: 'sum by (stage, topic) (increase(rag_dlq_messages_total[10m]))' },
    { record: 'rag:kafka_consumer_lag:sum', expr: 'sum by (group, topic) (rag_kafka_consumer_lag)' },
    {
      record: 'rag:degraded_answers:ratio_5m',
      expr: 'sum by (part) (rate(rag_degraded_total[5m]))\n/ ignoring(part) group_left\nsum(rate(rag_answers_total[5m]))',
    },
  ];
  return {
    groups: [
      { name: 'rag-slo-ratios', interval: '30s', rules: sloRules },
      { name: 'rag-slo-burn-rates', interval: '30s', rules: burn },
      { name: 'rag-latency', interval: '30s', rules: latency },
      { name: 'rag-pipeline', interval: '30s', rules: pipeline },
    ],
  };
}

const RUNBOOK = 'docs/operations.md#alerts';

function alertingRules() {
  const slo = [];
  for (const s of SLOS) {
    const budget = round(1 - s.objective);
    for (const [severity, pairs, speed] of [
      ['critical', s.fast ?? DEFAULT_FAST, 'fast'],
      ['warning', s.slow ?? DEFAULT_SLOW, 'slow'],
    ]) {
      slo.push({
        alert: s.alert,
        expr: burnCondition(s, pairs),
        labels: { severity, slo: s.slo, burn: speed },
        annotations: {
          summary: `SLO "${s.title}" is burning its error budget (${speed})`,
          description:
            `${s.description}. The bad-event ratio is {{ $value | humanizePercentage }} over the longer window; ` +
            `the budget is ${round(budget * 100)}% (burn-rate pairs: ${pairs.map(([l, sh, f]) => `${l}/${sh} at ${f}x`).join(', ')}).`,
          runbook: `${RUNBOOK}-${s.slo}`,
        },
      });
    }
  }
  const pipeline = [
    {
      alert: 'RagDLQGrowing',
      expr: 'rag:dlq_messages:increase10m > 0',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Messages are going to the dead-letter topic',
        description: '{{ $value }} messages from stage {{ $labels.stage }} ({{ $labels.topic }}) went to the DLQ in the last 10 minutes.',
        runbook: `${RUNBOOK}-dlq`,
      },
    },
    {
      alert: 'RagDLQGrowing',
      expr: 'sum by (stage, topic) (rate(rag_dlq_messages_total[5m])) > 1',
      for: '5m',
      labels: { severity: 'critical' },
      annotations: {
        summary: 'More than one message a second goes to the dead-letter topic',
        description: 'Stage {{ $labels.stage }} sends {{ $value | humanize }} messages/s from {{ $labels.topic }} to the DLQ.',
        runbook: `${RUNBOOK}-dlq`,
      },
    },
    {
      // The gateway's outbox relay has not put an accepted change on the bus for 5 minutes: the bus is down or refuses
      // the gateway (every upload since waits; nothing is lost — they go out when it is back).
      alert: 'RagOutboxBacklog',
      expr: 'max(rag_outbox_oldest_age_seconds) > 300',
      for: '5m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Accepted documents are waiting for the bus',
        description: 'The oldest accepted change has waited {{ $value | humanizeDuration }} in the registry outbox for its source event to reach the bus.',
        runbook: `${RUNBOOK}-outbox`,
      },
    },
    {
      alert: 'RagConsumerLagHigh',
      expr: 'rag:kafka_consumer_lag:sum > 1000',
      for: '10m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'A consumer group is more than 1000 messages behind',
        description: 'Group {{ $labels.group }} is {{ $value }} messages behind on {{ $labels.topic }}.',
        runbook: `${RUNBOOK}-consumer-lag`,
      },
    },
    {
      alert: 'RagConsumerStalled',
      expr:
        'rag:kafka_consumer_lag:sum > 0\n' +
        'unless on(topic) (sum by (topic) (rate(rag_bus_messages_total{outcome="ok"}[10m])) > 0)',
      for: '15m',
      labels: { severity: 'critical' },
      annotations: {
        summary: 'A consumer group has lag but processes nothing',
        description: 'Group {{ $labels.group }} has {{ $value }} messages waiting on {{ $labels.topic }} and handled none successfully for 10 minutes.',
        runbook: `${RUNBOOK}-consumer-lag`,
      },
    },
    {
      // Exactly one gateway replica runs the reconciler (PostgreSQL advisory lock, rag_leader{name} per replica).
      // None: source changes stop being reconciled; two: the lock is broken. Fires on either after 5 minutes (a
      // failover takes one lock retry, seconds). With no gateway scraped at all the sum is empty and this is silent:
      // the availability SLO covers that case.
      alert: 'RagReconcilerLeaderCount',
      expr: 'sum(rag_leader{name="reconciler"}) != 1',
      for: '5m',
      labels: { severity: 'critical' },
      annotations: {
        summary: 'Not exactly one gateway runs the reconciler',
        description: '{{ $value }} gateway replicas hold the reconciler lease (want 1).',
        runbook: `${RUNBOOK}-leader`,
      },
    },
    {
      alert: 'RagAnswersDegraded',
      expr: 'rag:degraded_answers:ratio_5m > 0.1',
      for: '10m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Answers are served without one of their parts',
        description: '{{ $value | humanizePercentage }} of answers are missing the {{ $labels.part }} part (a dependency is down).',
        runbook: `${RUNBOOK}-degraded`,
      },
    },
  ];
  return {
    groups: [
      { name: 'rag-slo-alerts', rules: slo },
      { name: 'rag-pipeline-alerts', rules: pipeline },
    ],
  };
}

// ---- dashboards -------------------------------------------------------------------------------------------------

const DS = { type: 'prometheus', uid: '${datasource}' };
const QUERY_STAGES = ['gateway', 'query', 'query-embed', 'retrieve', 'retrieve-dense', 'retrieve-keyword', 'fuse', 'rerank', 'generate'];
const INGEST_STAGES = ['load', 'chunk', 'embed', 'index', 'index-dense', 'index-keyword'];

function target(expr, legendFormat, refId) {
  return { datasource: DS, expr, legendFormat, refId, range: true };
}

function panel(id, title, type, gridPos, targets, extra = {}) {
  const refIds = 'ABCDEFGHIJ';
  return {
    id,
    title,
    type,
    datasource: DS,
    gridPos,
    targets: targets.map(([expr, legend], i) => target(expr, legend, refIds[i])),
    ...extra,
  };
}

function fieldConfig(unit, thresholds, extra = {}) {
  return {
    fieldConfig: {
      defaults: {
        unit,
        ...(thresholds
          ? {
              thresholds: {
                mode: 'absolute',
                steps: [{ color: 'green', value: null }, ...thresholds.map(([value, color]) => ({ color, value }))],
              },
            }
          : {}),
        ...extra,
      },
      overrides: [],
    },
  };
}

function dashboard(uid, title, description, panels, templating = []) {
  return {
    uid,
    title,
    description,
    tags: ['rag'],
    editable: true,
    graphTooltip: 1,
    schemaVersion: 39,
    version: 1,
    time: { from: 'now-6h', to: 'now' },
    refresh: '30s',
    timezone: 'browser',
    templating: {
      list: [
        {
          name: 'datasource',
          label: 'Prometheus',
          type: 'datasource',
          query: 'prometheus',
          current: {},
          hide: 0,
        },
        ...templating,
      ],
    },
    annotations: { list: [] },
    links: [{ title: 'RAG dashboards', type: 'dashboards', tags: ['rag'], asDropdown: true }],
    panels,
  };
}

const stageRegex = (stages) => stages.join('|');

function overview() {
  let id = 1;
  const stat = (title, expr, unit, x, thresholds) =>
    panel(id++, title, 'stat', { x, y: 0, w: 4, h: 4 }, [[expr, title]], {
      ...fieldConfig(unit, thresholds),
      options: { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, colorMode: 'value', graphMode: 'area' },
    });
  const jobVar = {
    name: 'job',
    label: 'Service',
    type: 'query',
    datasource: DS,
    query: { query: 'label_values(rag_process_start_time_seconds, job)', refId: 'job' },
    definition: 'label_values(rag_process_start_time_seconds, job)',
    includeAll: true,
    multi: true,
    allValue: '.*',
    current: {},
    refresh: 2,
    hide: 0,
  };
  const panels = [
    stat('Requests/s', `sum(rate(rag_http_requests_total{${API}}[$__rate_interval]))`, 'reqps', 0),
    stat('5xx ratio (1h)', 'rag_slo:error_ratio:rate1h{slo="availability"}', 'percentunit', 4, [[0.005, 'red']]),
    stat('Query P99', 'rag:stage_duration_seconds:p99_5m{stage="query"}', 's', 8, [[5, 'orange'], [12, 'red']]),
    stat('Refusals (1h)', 'rag_slo:error_ratio:rate1h{slo="empty-answers"}', 'percentunit', 12, [[0.2, 'red']]),
    stat('Thumbs-down (1h)', 'rag_slo:error_ratio:rate1h{slo="thumbs-down"}', 'percentunit', 16, [[0.15, 'red']]),
    stat('Consumer lag', 'sum(rag:kafka_consumer_lag:sum)', 'short', 20, [[1000, 'red']]),
    panel(id++, 'SLO burn rate (1h window; 1 = spending exactly the budget)', 'timeseries', { x: 0, y: 4, w: 12, h: 8 }, [
      ['rag_slo:burn_rate:rate1h', '{{slo}}'],
    ], fieldConfig('short', [[1, 'orange'], [14.4, 'red']])),
    panel(id++, 'Query latency by stage (P99)', 'timeseries', { x: 12, y: 4, w: 12, h: 8 }, [
      [`rag:stage_duration_seconds:p99_5m{stage=~"${stageRegex(QUERY_STAGES)}"}`, '{{stage}}'],
    ], fieldConfig('s')),
    panel(id++, 'Requests by route and status', 'timeseries', { x: 0, y: 12, w: 12, h: 8 }, [
      [`sum by (route, status) (rate(rag_http_requests_total{${API}}[$__rate_interval]))`, '{{route}} {{status}}'],
    ], fieldConfig('reqps')),
    panel(id++, 'Documents by status', 'timeseries', { x: 12, y: 12, w: 12, h: 8 }, [
      ['sum by (status) (rag_documents)', '{{status}}'],
    ], fieldConfig('short')),
    panel(id++, 'Resident memory', 'timeseries', { x: 0, y: 20, w: 12, h: 8 }, [
      ['rag_process_resident_memory_bytes{job=~"$job"}', '{{job}} {{pod}}'],
    ], fieldConfig('bytes')),
    panel(id++, 'Event-loop lag (P99)', 'timeseries', { x: 12, y: 20, w: 12, h: 8 }, [
      ['rag_nodejs_eventloop_lag_p99_seconds{job=~"$job"}', '{{job}} {{pod}}'],
    ], fieldConfig('s')),
  ];
  return dashboard('rag-overview', 'RAG / Overview', 'Traffic, SLO burn rates, latency, ingestion and resources at a glance.', panels, [jobVar]);
}

function queryLatency() {
  let id = 1;
  const stageVar = {
    name: 'stage',
    label: 'Stage',
    type: 'custom',
    query: QUERY_STAGES.join(','),
    includeAll: true,
    multi: true,
    allValue: stageRegex(QUERY_STAGES),
    current: { text: ['All'], value: ['$__all'] },
    hide: 0,
  };
  const panels = [];
  let y = 0;
  for (const [q, label] of [['p50', 'P50'], ['p95', 'P95'], ['p99', 'P99']]) {
    panels.push(
      panel(id++, `Query stages ${label}`, 'timeseries', { x: 0, y, w: 24, h: 8 }, [
        [`rag:stage_duration_seconds:${q}_5m{stage=~"$stage"}`, '{{stage}}'],
      ], fieldConfig('s')),
    );
    y += 8;
  }
  panels.push(
    panel(id++, 'Retrieval P99 vs the 2 s objective', 'timeseries', { x: 0, y, w: 12, h: 8 }, [
      ['rag:stage_duration_seconds:p99_5m{stage="retrieve"}', 'retrieve P99'],
      ['rag:stage_duration_seconds:p99_5m{stage=~"retrieve-dense|retrieve-keyword|fuse"}', '{{stage}} P99'],
    ], fieldConfig('s', [[2, 'red']], { custom: { thresholdsStyle: { mode: 'line' } } })),
    panel(id++, 'Generation P99 vs the 10 s objective', 'timeseries', { x: 12, y, w: 12, h: 8 }, [
      ['rag:stage_duration_seconds:p99_5m{stage="generate"}', 'generate P99'],
    ], fieldConfig('s', [[10, 'red']], { custom: { thresholdsStyle: { mode: 'line' } } })),
  );
  y += 8;
  panels.push(
    panel(id++, 'Whole query latency (heatmap)', 'heatmap', { x: 0, y, w: 12, h: 8 }, [
      ['sum by (le) (increase(rag_stage_duration_seconds_bucket{stage="query"}[$__rate_interval]))', '{{le}}'],
    ], { options: { calculate: false, yAxis: { unit: 's' } } }),
    panel(id++, 'API latency by route (P95)', 'timeseries', { x: 12, y, w: 12, h: 8 }, [
      ['rag:http_request_duration_seconds:p95_5m', '{{route}}'],
    ], fieldConfig('s')),
  );
  y += 8;
  panels.push(
    panel(id++, 'Stage calls/s', 'timeseries', { x: 0, y, w: 12, h: 8 }, [
      ['sum by (stage) (rate(rag_stage_duration_seconds_count{stage=~"$stage"}[$__rate_interval]))', '{{stage}}'],
    ], fieldConfig('ops')),
    panel(id++, 'LLM tokens/s', 'timeseries', { x: 12, y, w: 12, h: 8 }, [
      ['sum by (kind, model) (rate(rag_llm_tokens_total[$__rate_interval]))', '{{model}} {{kind}}'],
    ], fieldConfig('short')),
  );
  y += 8;
  panels.push(
    // Embedded mode: a rising main_busy share means the keyword workers are saturated and the event loop pays for
    // the searches (more RAG_QUERY_WORKERS, or more cores); timed_out means RAG_QUERY_WORKER_TIMEOUT_MS is hit.
    panel(id++, 'Embedded keyword searches/s by thread', 'timeseries', { x: 0, y, w: 12, h: 8 }, [
      ['sum by (thread) (rate(rag_keyword_searches_total[$__rate_interval]))', '{{thread}}'],
    ], fieldConfig('ops')),
    // Embedded mode: the term cache's miss share per connection. Under a steady load it should fall to a few per cent;
    // one that stays high means RAG_KEYWORD_TERM_CACHE_MB is below the working set of the questions asked (the bytes
    // held then sit at the budget: per connection for main, all workers together for worker). The refresh share — hits
    // on terms the keyword writer changed since, of which only the changed tail was read again — follows ingestion.
    panel(id++, 'Embedded keyword term cache: miss and refresh share', 'timeseries', { x: 12, y, w: 12, h: 8 }, [
      ['sum by (connection) (rate(rag_keyword_term_cache_lookups_total{result="miss"}[$__rate_interval])) / sum by (connection) (rate(rag_keyword_term_cache_lookups_total[$__rate_interval]))', '{{connection}} miss'],
      ['sum by (connection) (rate(rag_keyword_term_cache_lookups_total{result="refresh"}[$__rate_interval])) / sum by (connection) (rate(rag_keyword_term_cache_lookups_total[$__rate_interval]))', '{{connection}} refresh'],
    ], fieldConfig('percentunit')),
  );
  y += 8;
  panels.push(
    panel(id++, 'Embedded keyword term cache: bytes held', 'timeseries', { x: 0, y, w: 12, h: 8 }, [
      ['sum by (connection) (rag_keyword_term_cache_bytes)', '{{connection}}'],
    ], fieldConfig('bytes')),
  );
  return dashboard('rag-query-latency', 'RAG / Query latency', 'Where the time of a question goes: each stage of the query path at P50, P95 and P99.', panels, [stageVar]);
}

function ingestion() {
  let id = 1;
  const ing = stageRegex(INGEST_STAGES);
  const panels = [
    panel(id++, 'Messages handled/s by stage', 'timeseries', { x: 0, y: 0, w: 12, h: 8 }, [
      ['sum by (stage) (rag:bus_messages:rate5m{outcome="ok"})', '{{stage}} ok'],
      ['sum by (stage) (rag:bus_messages:rate5m{outcome="error"})', '{{stage}} error'],
    ], fieldConfig('ops')),
    panel(id++, 'Handling error ratio by stage', 'timeseries', { x: 12, y: 0, w: 12, h: 8 }, [
      ['rag:bus_messages:error_ratio_5m', '{{stage}}'],
    ], fieldConfig('percentunit')),
    panel(id++, 'Consumer lag by group and topic', 'timeseries', { x: 0, y: 8, w: 12, h: 8 }, [
      ['rag:kafka_consumer_lag:sum', '{{group}} {{topic}}'],
    ], fieldConfig('short', [[1000, 'red']])),
    panel(id++, 'Consumer lag by partition', 'timeseries', { x: 12, y: 8, w: 12, h: 8 }, [
      ['max by (topic, partition) (rag_kafka_consumer_lag)', '{{topic}}[{{partition}}]'],
    ], fieldConfig('short')),
    panel(id++, 'Dead-lettered messages (10 min)', 'timeseries', { x: 0, y: 16, w: 12, h: 8 }, [
      ['rag:dlq_messages:increase10m', '{{stage}} {{topic}}'],
    ], fieldConfig('short', [[1, 'red']])),
    panel(id++, 'Documents by status', 'timeseries', { x: 12, y: 16, w: 12, h: 8 }, [
      ['sum by (status) (rag_documents)', '{{status}}'],
    ], fieldConfig('short')),
    panel(id++, 'Ingestion stage latency P95', 'timeseries', { x: 0, y: 24, w: 12, h: 8 }, [
      [`rag:stage_duration_seconds:p95_5m{stage=~"${ing}"}`, '{{stage}}'],
    ], fieldConfig('s')),
    panel(id++, 'Ingestion stage throughput (calls/s)', 'timeseries', { x: 12, y: 24, w: 12, h: 8 }, [
      [`sum by (stage) (rate(rag_stage_duration_seconds_count{stage=~"${ing}"}[$__rate_interval]))`, '{{stage}}'],
    ], fieldConfig('ops')),
    // Embedded mode: the keyword index's writes run on a writer thread (RAG_KEYWORD_WRITE_WORKER); main_retry means
    // that thread failed and the write ran on the event loop instead (look at the logs: keyword-writer).
    panel(id++, 'Embedded keyword-index writes/s by thread', 'timeseries', { x: 0, y: 32, w: 12, h: 8 }, [
      ['sum by (thread, op) (rate(rag_keyword_writes_total[$__rate_interval]))', '{{thread}} {{op}}'],
    ], fieldConfig('ops')),
    // Embedded mode: the keyword writer renumbers the chunks by topic when due (RAG_KEYWORD_RECLUSTER_RATIO); keyword
    // writes wait meanwhile, so ingestion pauses for the last duration shown. failed: rolled back (see the logs).
    panel(id++, 'Embedded keyword-index reclusters: last duration (s), count per hour by outcome', 'timeseries', { x: 12, y: 32, w: 12, h: 8 }, [
      ['max(rag_keyword_recluster_last_seconds)', 'last duration (s)'],
      ['sum by (outcome) (increase(rag_keyword_reclusters_total[1h]))', '{{outcome}} per hour'],
    ], fieldConfig('short')),
    // Accepted changes whose source event is not yet on the bus (the gateway's registry outbox): grows while the bus is
    // down, drains when it is back (RagOutboxBacklog).
    panel(id++, 'Outbox: changes waiting for the bus, and the oldest one\'s wait (s)', 'timeseries', { x: 0, y: 40, w: 12, h: 8 }, [
      ['max(rag_outbox_messages)', 'messages'],
      ['max(rag_outbox_oldest_age_seconds)', 'oldest wait (s)'],
    ], fieldConfig('short', [[300, 'red']])),
    panel(id++, 'Outbox: bytes waiting (uploads ride in the source events)', 'timeseries', { x: 12, y: 40, w: 12, h: 8 }, [
      ['max(rag_outbox_bytes)', 'bytes'],
    ], fieldConfig('bytes')),
  ];
  return dashboard('rag-ingestion', 'RAG / Ingestion', 'Throughput, lag, failures and dead letters of the load → chunk → embed → index pipeline.', panels);
}

function answerQuality() {
  let id = 1;
  const panels = [
    panel(id++, 'Refusal (empty-answer) ratio vs 20 %', 'timeseries', { x: 0, y: 0, w: 12, h: 8 }, [
      ['rag_slo:error_ratio:rate5m{slo="empty-answers"}', '5 min'],
      ['rag_slo:error_ratio:rate1h{slo="empty-answers"}', '1 h'],
      ['rag_slo:error_ratio:rate1d{slo="empty-answers"}', '1 d'],
    ], fieldConfig('percentunit', [[0.2, 'red']], { custom: { thresholdsStyle: { mode: 'line' } } })),
    panel(id++, 'Thumbs-down ratio vs 15 %', 'timeseries', { x: 12, y: 0, w: 12, h: 8 }, [
      ['rag_slo:error_ratio:rate1h{slo="thumbs-down"}', '1 h'],
      ['rag_slo:error_ratio:rate1d{slo="thumbs-down"}', '1 d'],
    ], fieldConfig('percentunit', [[0.15, 'red']], { custom: { thresholdsStyle: { mode: 'line' } } })),
    panel(id++, 'Answers/s by outcome', 'timeseries', { x: 0, y: 8, w: 12, h: 8 }, [
      ['sum by (outcome) (rate(rag_answers_total[$__rate_interval]))', '{{outcome}}'],
    ], fieldConfig('ops')),
    panel(id++, 'Feedback votes (1 h)', 'timeseries', { x: 12, y: 8, w: 12, h: 8 }, [
      ['sum by (rating) (increase(rag_feedback_total[1h]))', '{{rating}}'],
    ], fieldConfig('short')),
    panel(id++, 'Degraded answers by missing part', 'timeseries', { x: 0, y: 16, w: 12, h: 8 }, [
      ['rag:degraded_answers:ratio_5m', '{{part}}'],
    ], fieldConfig('percentunit')),
    panel(id++, 'Quality SLO burn rates (1 h)', 'timeseries', { x: 12, y: 16, w: 12, h: 8 }, [
      ['rag_slo:burn_rate:rate1h{slo=~"empty-answers|thumbs-down"}', '{{slo}}'],
    ], fieldConfig('short', [[1, 'red']])),
  ];
  return dashboard('rag-answer-quality', 'RAG / Answer quality', 'Refusals, thumbs-down votes and degraded answers against their objectives.', panels);
}

// ---- output -----------------------------------------------------------------------------------------------------

const HEADER = '# Generated by deploy/observability/generate.mjs: edit the tables there and run it again.\n';

export function outputs() {
  const yaml = (doc) => HEADER + YAML.stringify(doc, { lineWidth: 0 });
  const json = (doc) => JSON.stringify(doc, null, 2) + '\n';
  return {
    'prometheus/rules/recording.rules.yaml': yaml(recordingRules()),
    'prometheus/rules/alerting.rules.yaml': yaml(alertingRules()),
    'grafana/dashboards/rag-overview.json': json(overview()),
    'grafana/dashboards/rag-query-latency.json': json(queryLatency()),
    'grafana/dashboards/rag-ingestion.json': json(ingestion()),
    'grafana/dashboards/rag-answer-quality.json': json(answerQuality()),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [file, content] of Object.entries(outputs())) {
    const path = join(here, file);
    let current = null;
    try {
      current = readFileSync(path, 'utf8');
    } catch {
      /* missing */
    }
    if (current === content) continue;
    if (check) {
      process.stderr.write(`stale: ${relative(root, path)} (run node deploy/observability/generate.mjs)\n`);
      stale++;
    } else {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
      process.stdout.write(`wrote ${relative(root, path)}\n`);
    }
  }
  if (stale) process.exit(1);
}
