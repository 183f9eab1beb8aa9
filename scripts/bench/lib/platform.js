'use strict';
// Targets for the load and ingest benchmarks: the embedded platform in this process (from dist/), or a running
// gateway over HTTP (loopback only). Both offer submit / statuses / metrics with the same shapes.
const { mkdtempSync, rmSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const c = require('./common');

const TERMINAL = new Set(['indexed', 'failed', 'deleted']);

/** Platform config for an embedded target: env settings, a (temp) data dir, loopback, anonymous, quiet logs. */
function embeddedConfig({ dataDir, port = 0, overrides = {} }) {
  const platform = c.requireDist('libs/platform/src/index.js');
  if (!process.env.RAG_LOG_LEVEL) platform.setLogLevel('warn');
  return platform.loadConfig(process.env, { RAG_DATA_DIR: dataDir, RAG_PORT: port, RAG_HOST: '127.0.0.1', RAG_API_KEYS: undefined, RAG_OPEN_BROWSER: false, ...overrides });
}

function tempDataDir(label) {
  return mkdtempSync(join(os.tmpdir(), `rag-bench-${label}-`));
}

function removeDir(dir) {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch (e) {
    c.log(`could not remove ${dir}: ${e.message}`);
  }
}

/** What an embedded instance is configured with, for the report. */
function describeConfig(cfg) {
  return {
    embedder: cfg.RAG_EMBEDDER === 'onnx' ? `onnx:${cfg.RAG_EMBEDDING_MODEL}` : cfg.RAG_EMBEDDER,
    reranker: cfg.RAG_RERANKER,
    llm: cfg.RAG_LLM,
    chunk_tokens: cfg.RAG_CHUNK_TOKENS,
    chunk_overlap_tokens: cfg.RAG_CHUNK_OVERLAP_TOKENS,
    parent_chunk_tokens: cfg.RAG_PARENT_CHUNK_TOKENS,
    hnsw_ef: cfg.RAG_HNSW_EF,
    bus_partitions: cfg.RAG_BUS_PARTITIONS,
    sqlite_synchronous: cfg.RAG_SQLITE_SYNCHRONOUS,
  };
}

/** Client over the in-process handles (DocumentService + Registry), as the CLI's InProcessClient does it. */
function inProcessClient(handles) {
  // Submissions go through the CLI's own in-process client (`rag ingest`): one submitMany per call, as
  // POST /v1/documents:batch does.
  const { InProcessClient } = c.requireDist('apps/cli/src/platform-client.js');
  const cli = new InProcessClient(handles);
  return {
    where: 'embedded (in-process)',
    async submit(docs) {
      const out = await cli.submit(docs.map((d) => ({ id: d.id, ...(d.title ? { title: d.title } : {}), text: d.text })));
      return out.map((o) => (o.ok ? { ...o, unchanged: !!o.unchanged } : o));
    },
    /** Documents per status (the registry's maintained counts: one small query, whatever the number pending). */
    async counts() {
      return handles.registry.countByStatus();
    },
    async statuses(ids) {
      const out = [];
      for (const id of ids) {
        const r = await handles.registry.get(id);
        if (r) out.push({ document_id: id, status: r.status, chunks: r.chunks, error: r.error });
      }
      return out;
    },
    async remove(ids) {
      for (const id of ids) await handles.documents.delete(id, 'default');
    },
  };
}

/** Client over a gateway's HTTP API (loopback only). */
function httpClient(url, apiKey) {
  const origin = c.assertLoopbackUrl(url, '--url');
  const call = (method, path, body, timeoutMs) => c.httpJson(method, origin + path, body, { apiKey, timeoutMs });
  return {
    where: origin,
    origin,
    async healthy() {
      try {
        return (await call('GET', '/healthz', undefined, 3000)).ok;
      } catch {
        return false;
      }
    },
    async submit(docs) {
      const out = [];
      for (let i = 0; i < docs.length; i += 100) {
        const batch = docs.slice(i, i + 100);
        const r = await call('POST', '/v1/documents:batch', { documents: batch.map((d) => ({ id: d.id, ...(d.title ? { title: d.title } : {}), text: d.text })) }, 60_000);
        if (!r.ok) throw new Error(`POST /v1/documents:batch: ${r.status} ${r.text.slice(0, 300)}`);
        for (const a of r.json.accepted ?? []) out.push({ document_id: a.document_id, ok: true, unchanged: !!a.unchanged });
        for (const j of r.json.rejected ?? []) out.push({ document_id: batch[j.index]?.id, ok: false, error: j.error?.message ?? JSON.stringify(j.error) });
      }
      return out;
    },
    /**
     * The views of `ids`. With `sinceMs` (wall clock before the first submit) and many ids, from the list endpoint
     * (`GET /v1/documents`, most recently updated first, 1,000 a page, paged only back to `sinceMs`): a few requests per
     * poll instead of one per pending document, which competed with the pipeline for the gateway and the registry
     * (thousands of GETs a run on 2 cores); the embedded target reads its registry in-process. Falls back to one GET per
     * id when the list is not answered.
     */
    async statuses(ids, sinceMs) {
      if (sinceMs !== undefined && ids.length > 20) {
        const wanted = new Set(ids);
        const out = [];
        let listed = true;
        for (let offset = 0; ; offset += 1000) {
          const r = await call('GET', `/v1/documents?limit=1000&offset=${offset}`, undefined, 15_000).catch(() => undefined);
          const page = r?.ok ? r.json?.documents : undefined;
          if (!Array.isArray(page)) {
            listed = false;
            break;
          }
          for (const v of page) if (wanted.has(v.document_id)) out.push({ document_id: v.document_id, status: v.status, chunks: v.chunks, error: v.error });
          const last = page.at(-1);
          // A margin for clock differences between this process and the services (same machine here).
          if (page.length < 1000 || !last || Date.parse(last.updated_at) < sinceMs - 5000) break;
        }
        if (listed) return out;
      }
      const out = [];
      const queue = [...ids];
      const worker = async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          try {
            const r = await call('GET', `/v1/documents/${encodeURIComponent(id)}`, undefined, 15_000);
            if (r.ok && r.json) out.push({ document_id: id, status: r.json.status, chunks: r.json.chunks, error: r.json.error });
          } catch {
            /* not visible yet */
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      return out;
    },
    async remove(ids) {
      const queue = [...ids];
      const worker = async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          try {
            await call('DELETE', `/v1/documents/${encodeURIComponent(id)}`, undefined, 15_000);
          } catch {
            /* best effort */
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
    },
    async metricsText(path = '/metrics') {
      const r = await call('GET', path, undefined, 5000);
      return r.ok ? r.text : undefined;
    },
  };
}

/**
 * Submits documents and waits until every accepted one is in a terminal state. Returns counts, chunks and
 * timings (submit_s = time to hand everything over, seconds = first submit to last terminal status).
 */
async function ingestAndWait(client, docs, { timeoutMs = 30 * 60_000, label = 'ingest', pollMs = 250 } = {}) {
  // In process, the registry's status counts before submitting (see the wait below).
  const terminal = (counts) => [...TERMINAL].reduce((a, st) => a + (counts[st] ?? 0), 0);
  const base = client.counts ? await client.counts() : undefined;
  const t0 = process.hrtime.bigint();
  const since = Date.now();
  const pending = new Set();
  const rejected = [];
  let unchanged = 0;
  for (let i = 0; i < docs.length; i += 100) {
    for (const o of await client.submit(docs.slice(i, i + 100))) {
      if (!o.ok) rejected.push(o);
      else {
        if (o.unchanged) unchanged++;
        pending.add(o.document_id);
      }
    }
  }
  const submitS = Number(process.hrtime.bigint() - t0) / 1e9;
  c.log(`${label}: submitted ${docs.length} documents in ${submitS.toFixed(1)} s (${rejected.length} rejected, ${unchanged} unchanged)`);
  const deadline = Date.now() + timeoutMs;
  let indexed = 0;
  let chunks = 0;
  const failed = [];
  let lastLog = Date.now();
  // In process, wait on the registry's status counts: one query a poll. Reading every pending document's status each
  // poll (≈ 1,000 lookups 4 times a second for Cranfield) cost ≈ 3 % of the measured process's main thread in a
  // --cpu-prof of `bench ingest` (2026-12-06) — the benchmark's own work charged to the pipeline. Only over a folder
  // with no finished document before the submit (read before it, so documents finished during it count): documents
  // submitted again over a used folder leave and re-enter the counts, which then cannot tell. The loop over the views
  // below confirms every document once either way.
  if (base && terminal(base) === 0) {
    while (Date.now() <= deadline) {
      const done = terminal(await client.counts());
      if (done >= pending.size) break;
      if (Date.now() - lastLog > 5000) {
        c.log(`${label}: ${done}/${pending.size} done`);
        lastLog = Date.now();
      }
      await c.sleep(pollMs);
    }
  }
  while (pending.size > 0) {
    const views = await client.statuses([...pending], since);
    for (const v of views) {
      if (!TERMINAL.has(v.status)) continue;
      pending.delete(v.document_id);
      if (v.status === 'indexed') {
        indexed++;
        chunks += Number(v.chunks) || 0;
      } else failed.push({ document_id: v.document_id, status: v.status, error: v.error });
    }
    if (pending.size === 0) break;
    if (Date.now() > deadline) throw new Error(`${label}: ${pending.size} documents still not indexed after ${Math.round(timeoutMs / 1000)} s`);
    if (Date.now() - lastLog > 5000) {
      c.log(`${label}: ${docs.length - rejected.length - pending.size}/${docs.length - rejected.length} done, ${chunks} chunks`);
      lastLog = Date.now();
    }
    await c.sleep(pollMs);
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  c.log(`${label}: ${indexed} indexed, ${failed.length} failed, ${chunks} chunks in ${seconds.toFixed(1)} s`);
  return { documents: docs.length, accepted: docs.length - rejected.length, rejected: rejected.length, unchanged, indexed, failed: failed.length, failed_examples: failed.slice(0, 3), chunks, submit_s: submitS, seconds };
}

/** Cranfield documents with an id prefix (each prefix is a distinct copy of the corpus). */
function cranfieldDocs(corpus, prefix) {
  return corpus.filter((d) => typeof d.text === 'string' && d.text.trim()).map((d) => ({ id: `${prefix}${d._id}`, title: d.title || undefined, text: d.text }));
}

// ---------- stage histogram ----------

const STAGE = 'rag_stage_duration_seconds';

/** {stage: {sum, count}} from prom-client's getMetricsAsJSON(). */
function stagesFromJson(metrics) {
  const out = {};
  const h = metrics.find((m) => m.name === STAGE);
  for (const v of h?.values ?? []) {
    const stage = v.labels?.stage;
    if (!stage) continue;
    out[stage] ??= { sum: 0, count: 0 };
    if (v.metricName === `${STAGE}_sum`) out[stage].sum += Number(v.value);
    else if (v.metricName === `${STAGE}_count`) out[stage].count += Number(v.value);
  }
  return out;
}

/** {stage: {sum, count}} from Prometheus text exposition (any number of scraped processes, summed). */
function stagesFromText(texts) {
  const out = {};
  const re = new RegExp(`^${STAGE}_(sum|count)\\{([^}]*)\\}\\s+([^\\s]+)`, 'mg');
  for (const text of texts) {
    if (!text) continue;
    for (const m of text.matchAll(re)) {
      const stage = /(?:^|,)stage="([^"]*)"/.exec(m[2])?.[1];
      if (!stage) continue;
      out[stage] ??= { sum: 0, count: 0 };
      out[stage][m[1]] += Number(m[3]);
    }
  }
  return out;
}

function diffStages(before, after) {
  const out = {};
  for (const [stage, a] of Object.entries(after)) {
    const b = before[stage] ?? { sum: 0, count: 0 };
    const d = { sum: a.sum - b.sum, count: a.count - b.count };
    if (d.count > 0 || d.sum > 0) out[stage] = d;
  }
  return out;
}

/**
 * The /metrics URLs of a running platform: the given ones, or the gateway's port and the next seven (where
 * scripts/distributed.js puts the eight services; an embedded server answers on the first alone).
 */
function metricsUrls(origin, given = []) {
  if (given.length) return given.map((u) => c.assertLoopbackUrl(u, '--metrics-url') + new URL(u).pathname);
  const u = new URL(origin);
  const port = Number(u.port || 80);
  return Array.from({ length: 8 }, (_, i) => `${u.protocol}//${u.hostname}:${port + i}/metrics`);
}

/** The Prometheus texts of those URLs that answer with the platform's metrics (`answered`: which did). */
async function scrape(urls, apiKey) {
  const texts = [];
  const answered = [];
  for (const url of urls) {
    try {
      const r = await c.httpJson('GET', url, undefined, { timeoutMs: 5000, apiKey });
      if (r.ok && r.text.includes('rag_')) {
        texts.push(r.text);
        answered.push(url);
      }
    } catch {
      /* not a service */
    }
  }
  return { texts, answered };
}

/** A gauge value (e.g. rag_process_resident_memory_bytes) from Prometheus text. */
function gaugeFromText(text, name) {
  if (!text) return undefined;
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+([^\\s]+)`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

module.exports = {
  embeddedConfig,
  tempDataDir,
  removeDir,
  describeConfig,
  inProcessClient,
  httpClient,
  ingestAndWait,
  cranfieldDocs,
  stagesFromJson,
  stagesFromText,
  diffStages,
  gaugeFromText,
  metricsUrls,
  scrape,
  resolve,
};
