'use strict';
// Child process of `bench load`: runs autocannon against one URL and prints one JSON line with the result and
// exact latency percentiles (from every response time). Runs apart from the server so they do not share an event loop.
//
//   node cannon-worker.js '<json: {url, path, connections, duration, bodiesFile, apiKey?, timeout, warmup?}>'
const { readFileSync } = require('node:fs');
const autocannon = require('autocannon');

const cfg = JSON.parse(process.argv[2]);
const bodies = readFileSync(cfg.bodiesFile, 'utf8')
  .split('\n')
  .filter((l) => l.trim());
let next = 0;

const latencies = [];
const statusCounts = {};
const instance = autocannon(
  {
    url: cfg.url,
    connections: cfg.connections,
    duration: cfg.duration,
    timeout: cfg.timeout,
    headers: { 'content-type': 'application/json', ...(cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {}) },
    requests: [
      {
        method: 'POST',
        path: cfg.path,
        setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }),
      },
    ],
  },
  (err, result) => {
    if (err) {
      process.stdout.write(JSON.stringify({ error: String(err && err.stack ? err.stack : err) }) + '\n');
      process.exit(1);
    }
    latencies.sort((a, b) => a - b);
    const q = (x) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil(x * latencies.length) - 1))] : null);
    const mean = latencies.length ? latencies.reduce((a, b) => a + b, 0) / latencies.length : null;
    process.stdout.write(
      JSON.stringify({
        connections: cfg.connections,
        duration_s: result.duration,
        requests_total: result.requests.total,
        responses: latencies.length,
        rps_mean: result.requests.average,
        throughput_rps: latencies.length / result.duration,
        latency_ms: { p50: q(0.5), p95: q(0.95), p99: q(0.99), max: latencies.length ? latencies[latencies.length - 1] : null, mean },
        autocannon_latency_ms: { p50: result.latency.p50, p97_5: result.latency.p97_5, p99: result.latency.p99, max: result.latency.max },
        status_counts: statusCounts,
        non2xx: result.non2xx,
        errors: result.errors,
        timeouts: result.timeouts,
        mismatches: result.mismatches,
        resets: result.resets,
      }) + '\n',
    );
  },
);
instance.on('response', (_client, statusCode, _bytes, responseTime) => {
  latencies.push(responseTime);
  statusCounts[statusCode] = (statusCounts[statusCode] || 0) + 1;
});
process.on('SIGTERM', () => instance.stop());
