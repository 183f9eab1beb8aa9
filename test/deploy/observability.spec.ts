// deploy/observability: the Prometheus rules pass `promtool check rules` and their unit tests, the dashboards are
// valid JSON whose queries parse and name only metrics (and stage values, and labels) the services export, and every
// recording-rule output a dashboard or alert uses is defined; the OpenTelemetry Collector config passes a collector's
// own validation. Needs promtool and otelcol-rag (bash deploy/tools/install.sh prometheus otelcol).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STAGES, metricsRegistry } from '@rag/platform';
import YAML from 'yaml';
import { selectors, type Selector } from './promql';
import { ROOT, mustRun, once, run, tempDir, tool } from './tools';

const OBS = join(ROOT, 'deploy/observability');
const RULES_DIR = join(OBS, 'prometheus/rules');
const DASH_DIR = join(OBS, 'grafana/dashboards');
const RULE_FILES = readdirSync(RULES_DIR).filter((f) => f.endsWith('.yaml')).map((f) => join(RULES_DIR, f));
const DASHBOARD_FILES = readdirSync(DASH_DIR).filter((f) => f.endsWith('.json')).map((f) => join(DASH_DIR, f));

/** Labels Prometheus attaches to every scraped series (targets, ServiceMonitor relabelling) besides the metric's own. */
const TARGET_LABELS = new Set(['job', 'instance', 'namespace', 'pod', 'service', 'container', 'endpoint', 'component']);

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  labels?: Record<string, string>;
}
const rules: Rule[] = RULE_FILES.flatMap((f) => (YAML.parse(readFileSync(f, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules));
const recorded = new Map<string, Rule[]>();
for (const r of rules) if (r.record) recorded.set(r.record, [...(recorded.get(r.record) ?? []), r]);

interface Panel {
  id: number;
  title: string;
  type: string;
  targets?: { expr: string; refId: string }[];
  panels?: Panel[];
}
const dashboards = DASHBOARD_FILES.map((f) => ({ file: f, json: JSON.parse(readFileSync(f, 'utf8')) as { uid: string; title: string; panels: Panel[]; templating: { list: { name: string; query?: unknown; definition?: string }[] } } }));
const dashboardExprs = dashboards.flatMap(({ file, json }) => {
  const panelExprs = json.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `${file}: panel "${p.title}"`, expr: t.expr })));
  const varExprs = json.templating.list.filter((v) => v.definition).map((v) => ({ where: `${file}: variable ${v.name}`, expr: labelValuesMetric(v.definition!) }));
  return [...panelExprs, ...varExprs];
});

/** label_values(metric, label) → the metric, so variable queries are checked like panel queries. */
function labelValuesMetric(def: string): string {
  const m = /^label_values\(\s*([^,]+),\s*[A-Za-z_]+\s*\)$/.exec(def.trim());
  if (!m) throw new Error(`unsupported variable query ${def}`);
  return m[1];
}

/** The exported metric a series name belongs to: histograms expose _bucket, _sum and _count. */
function exportedMetric(series: string): { name: string; labels: string[]; suffix: string } | undefined {
  for (const suffix of ['', '_bucket', '_sum', '_count']) {
    if (suffix && !series.endsWith(suffix)) continue;
    const base = suffix ? series.slice(0, -suffix.length) : series;
    const metric = metricsRegistry.getSingleMetric(base) as unknown as { labelNames?: string[] } | undefined;
    if (metric && (suffix === '' || (metric as unknown as { constructor: { name: string } }).constructor.name === 'Histogram')) {
      return { name: base, labels: metric.labelNames ?? [], suffix };
    }
  }
  return undefined;
}

/** Problems with the selectors of one expression: unknown metrics, labels, stage values, undefined recordings. */
function problems(where: string, expr: string): string[] {
  const out: string[] = [];
  let found: Selector[];
  try {
    found = selectors(expr);
  } catch (e) {
    return [`${where}: ${(e as Error).message}`];
  }
  for (const s of found) {
    if (!s.metric) {
      out.push(`${where}: a selector without a metric name in ${expr}`);
      continue;
    }
    let labels: Set<string>;
    if (s.metric.includes(':')) {
      const defs = recorded.get(s.metric);
      if (!defs) {
        out.push(`${where}: recording rule ${s.metric} is used but not defined in ${RULES_DIR}`);
        continue;
      }
      labels = recordingLabels(s.metric);
    } else {
      const m = exportedMetric(s.metric);
      if (!m) {
        out.push(`${where}: ${s.metric} is not a metric the services export (libs/platform/src/telemetry/metrics.ts)`);
        continue;
      }
      labels = new Set([...m.labels, ...(m.suffix === '_bucket' ? ['le'] : [])]);
    }
    for (const matcher of s.matchers) {
      if (!labels.has(matcher.name) && !TARGET_LABELS.has(matcher.name)) {
        out.push(`${where}: ${s.metric} has no label ${matcher.name}`);
      }
      if (matcher.name === 'stage') {
        const values = matcher.op.endsWith('~') ? matcher.value.split('|') : [matcher.value];
        for (const v of values) {
          if (v.startsWith('$')) continue; // a Grafana variable, checked below
          if (!(STAGES as readonly string[]).includes(v)) out.push(`${where}: stage "${v}" is not one of STAGES (${STAGES.join(', ')})`);
        }
      }
    }
  }
  return out;
}

/** Label names an expression groups or matches by (by, without, on, ignoring): they survive into a recording. */
function groupingLabels(expr: string): string[] {
  return [...expr.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)].flatMap((m) => m[1].split(',').map((l) => l.trim()).filter(Boolean));
}

/**
 * The labels a recording may carry (an over-approximation, enough to catch a matcher on a label that cannot be
 * there): its rules' static labels, the labels its expressions group or match by or select on, and, through other
 * recordings it reads, theirs.
 */
function recordingLabels(name: string, seen = new Set<string>()): Set<string> {
  const labels = new Set<string>();
  if (seen.has(name)) return labels;
  seen.add(name);
  for (const d of recorded.get(name) ?? []) {
    for (const l of Object.keys(d.labels ?? {})) labels.add(l);
    for (const l of groupingLabels(d.expr)) labels.add(l);
    for (const sel of selectors(d.expr)) {
      for (const m of sel.matchers) labels.add(m.name);
      if (sel.metric.includes(':')) for (const l of recordingLabels(sel.metric, seen)) labels.add(l);
    }
  }
  return labels;
}

describe('observability: generated files', () => {
  it('rules and dashboards are what deploy/observability/generate.mjs writes (not edited by hand, not stale)', () => {
    const r = run(process.execPath, [join(OBS, 'generate.mjs'), '--check']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('observability: Prometheus rules', () => {
  const promtool = once(() => tool('promtool'));

  it('pass promtool check rules', () => {
    const out = mustRun(promtool(), ['check', 'rules', ...RULE_FILES]);
    expect(out).toMatch(/SUCCESS: \d+ rules found/);
    expect(out).not.toMatch(/FAILED/);
  });

  it('pass their promtool unit tests (every burn-rate alert fires and stays silent when it should)', () => {
    const tests = readdirSync(join(OBS, 'prometheus/tests')).filter((f) => f.endsWith('.test.yaml'));
    expect(tests.length).toBeGreaterThan(0);
    const out = mustRun(promtool(), ['test', 'rules', ...tests.map((f) => join(OBS, 'prometheus/tests', f))]);
    expect(out).toMatch(/SUCCESS/);
    // every alert has a test case in which it fires
    const testText = tests.map((f) => readFileSync(join(OBS, 'prometheus/tests', f), 'utf8')).join('\n');
    for (const alert of new Set(rules.filter((r) => r.alert).map((r) => r.alert!))) {
      expect(testText, `no unit test for ${alert}`).toMatch(new RegExp(`alertname: ${alert}\\n\\s+exp_alerts:\\n(\\s+#.*\\n)*\\s+- exp_labels`));
    }
  });

  it('promtool rejects a broken rule file (the check is real)', () => {
    const dir = tempDir('rules');
    const file = join(dir, 'broken.rules.yaml');
    writeFileSync(file, 'groups:\n  - name: x\n    rules:\n      - record: a:b\n        expr: sum(rate(x[5m])\n');
    const r = run(promtool(), ['check', 'rules', file]);
    expect(r.status).not.toBe(0);
  });

  it('name only exported metrics, known labels and stage values, and defined recordings', () => {
    const found = rules.flatMap((r) => problems(r.record ?? r.alert!, r.expr));
    expect(found).toEqual([]);
  });

  it("link runbooks that exist in docs/operations.md", () => {
    const doc = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    // GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes
    const anchors = new Set([...doc.matchAll(/^#+ (.+)$/gm)].map((m) => m[1].toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-')));
    const runbooks = new Set(rules.filter((r) => r.alert).map((r) => (r as Rule & { annotations: { runbook: string } }).annotations.runbook));
    expect(runbooks.size).toBeGreaterThan(5);
    for (const rb of runbooks) {
      const [file, anchor] = rb.split('#');
      expect(file).toBe('docs/operations.md');
      expect(anchors.has(anchor), `${rb} has no heading`).toBe(true);
    }
  });

  it('cover the SLOs of the issue', () => {
    const slos = new Set(rules.filter((r) => r.record === 'rag_slo:objective').map((r) => `${r.labels!.slo}=${r.expr}`));
    expect([...slos].sort()).toEqual(['availability=0.995', 'empty-answers=0.8', 'generation-latency=0.99', 'retrieval-latency=0.99', 'thumbs-down=0.85']);
    const alerts = new Set(rules.filter((r) => r.alert).map((r) => r.alert));
    for (const a of ['RagRetrievalLatencyBudgetBurn', 'RagGenerationLatencyBudgetBurn', 'RagErrorBudgetBurn', 'RagEmptyAnswerRateHigh', 'RagThumbsDownRateHigh', 'RagDLQGrowing', 'RagConsumerLagHigh']) {
      expect(alerts.has(a), a).toBe(true);
    }
    // the latency SLOs measure the objectives' thresholds, which must be histogram bucket boundaries
    const retrieval = rules.find((r) => r.record === 'rag_slo:error_ratio:rate5m' && r.labels?.slo === 'retrieval-latency')!;
    expect(retrieval.expr).toContain('stage="retrieve",le="2"');
    const generation = rules.find((r) => r.record === 'rag_slo:error_ratio:rate5m' && r.labels?.slo === 'generation-latency')!;
    expect(generation.expr).toContain('stage="generate",le="10"');
    const buckets = (metricsRegistry.getSingleMetric('rag_stage_duration_seconds') as unknown as { upperBounds: number[] }).upperBounds;
    expect(buckets).toContain(2);
    expect(buckets).toContain(10);
  });
});

describe('observability: Grafana dashboards', () => {
  it('are the four dashboards, valid JSON with unique uids and panel ids', () => {
    expect(dashboards.map((d) => d.json.uid).sort()).toEqual(['rag-answer-quality', 'rag-ingestion', 'rag-overview', 'rag-query-latency']);
    for (const { file, json } of dashboards) {
      const ids = json.panels.map((p) => p.id);
      expect(new Set(ids).size, file).toBe(ids.length);
      expect(json.templating.list.some((v) => v.name === 'datasource'), file).toBe(true);
      for (const p of json.panels) expect(p.targets?.length, `${file}: ${p.title}`).toBeGreaterThan(0);
    }
  });

  it('query only exported metrics, known labels and stage values, and defined recordings', () => {
    expect(dashboardExprs.length).toBeGreaterThan(30);
    const found = dashboardExprs.flatMap(({ where, expr }) => problems(where, expr));
    expect(found).toEqual([]);
  });

  it('cover query latency by stage at P50/P95/P99, ingestion throughput and lag, refusals and thumbs-down', () => {
    const all = dashboardExprs.map((d) => d.expr).join('\n');
    for (const q of ['p50', 'p95', 'p99']) expect(all).toContain(`rag:stage_duration_seconds:${q}_5m`);
    expect(all).toContain('rag:bus_messages:rate5m');
    expect(all).toContain('rag:kafka_consumer_lag:sum');
    expect(all).toContain('slo="empty-answers"');
    expect(all).toContain('slo="thumbs-down"');
  });

  it('have queries that Prometheus parses (promtool, with Grafana variables substituted)', () => {
    const promtool = tool('promtool');
    const dir = tempDir('dash');
    const file = join(dir, 'dashboard-queries.rules.yaml');
    const rulesDoc = {
      groups: [
        {
          name: 'dashboard-queries',
          rules: dashboardExprs.map((d, i) => ({
            record: `dashboard:query_${i}`,
            expr: d.expr.replaceAll('$__rate_interval', '5m').replaceAll('"$stage"', '"query"').replaceAll('"$job"', '".*"'),
          })),
        },
      ],
    };
    writeFileSync(file, YAML.stringify(rulesDoc));
    const out = mustRun(promtool, ['check', 'rules', file]);
    expect(out).toContain(`SUCCESS: ${dashboardExprs.length} rules found`);
  });

  it('the checker itself flags an unknown metric, label, stage and recording', () => {
    expect(problems('t', 'rate(rag_stage_duration_seconds_bucket{stage="retreive"}[5m])')).toEqual([expect.stringContaining('stage "retreive"')]);
    expect(problems('t', 'sum(rate(rag_answer_total[5m]))')).toEqual([expect.stringContaining('rag_answer_total is not a metric')]);
    expect(problems('t', 'rag_feedback_total{rate="down"}')).toEqual([expect.stringContaining('has no label rate')]);
    expect(problems('t', 'rag:nope:rate5m')).toEqual([expect.stringContaining('not defined')]);
    expect(problems('t', 'rag_feedback_total_bucket')).toEqual([expect.stringContaining('is not a metric')]);
    expect(problems('t', 'histogram_quantile(0.9, sum by (le) (rate(rag_http_request_duration_seconds_bucket{route="/v1/query"}[5m])))')).toEqual([]);
  });
});

describe('observability: OpenTelemetry Collector config', () => {
  const cfg = YAML.parse(readFileSync(join(OBS, 'otel-collector/config.yaml'), 'utf8')) as {
    receivers: Record<string, { protocols?: { http?: { endpoint: string } } }>;
    processors: Record<string, unknown>;
    exporters: Record<string, unknown>;
    extensions: Record<string, unknown>;
    service: { extensions: string[]; pipelines: Record<string, { receivers: string[]; processors: string[]; exporters: string[] }> };
  };

  it('defines every component its pipelines use, and receives OTLP/HTTP on 4318 (what the services export)', () => {
    for (const [name, p] of Object.entries(cfg.service.pipelines)) {
      for (const r of p.receivers) expect(cfg.receivers, `${name}: receiver ${r}`).toHaveProperty([r]);
      for (const r of p.processors) expect(cfg.processors, `${name}: processor ${r}`).toHaveProperty([r]);
      for (const r of p.exporters) expect(cfg.exporters, `${name}: exporter ${r}`).toHaveProperty([r]);
      expect(p.processors[0], 'memory_limiter must come first').toBe('memory_limiter');
      expect(p.processors.at(-1), 'batch must come last').toBe('batch');
    }
    for (const e of cfg.service.extensions) expect(cfg.extensions).toHaveProperty([e]);
    expect(cfg.receivers.otlp.protocols?.http?.endpoint).toBe('0.0.0.0:4318');
    expect(cfg.service.pipelines.traces).toBeDefined();
  });

  it('passes `validate` of a collector built with its components (unknown keys, missing settings are errors)', () => {
    const otelcol = tool('otelcol-rag');
    const file = join(OBS, 'otel-collector/config.yaml');
    const withEndpoint = { ...process.env, TRACES_ENDPOINT: 'tempo.observability.svc:4317' };
    const ok = run(otelcol, ['validate', `--config=${file}`], { env: withEndpoint });
    expect(ok.stderr + ok.stdout).toBe('');
    expect(ok.status).toBe(0);
    // the exporter's endpoint comes from TRACES_ENDPOINT (the chart sets it): without it the config is invalid
    const noEndpoint = { ...process.env };
    delete noEndpoint.TRACES_ENDPOINT;
    const missing = run(otelcol, ['validate', `--config=${file}`], { env: noEndpoint });
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('requires a non-empty "endpoint"');
    // a misspelt key is rejected, so the check is strict
    const dir = tempDir('otel');
    writeFileSync(join(dir, 'bad.yaml'), readFileSync(file, 'utf8').replace('num_traces:', 'num_tracez:'));
    const typo = run(otelcol, ['validate', `--config=${join(dir, 'bad.yaml')}`], { env: withEndpoint });
    expect(typo.status).not.toBe(0);
    expect(typo.stderr).toContain('invalid keys: num_tracez');
  });
});
