/**
 * Test support for the adapters' recorded-response tests: a router that answers HTTP requests made by the real
 * OpenSearch / Elasticsearch clients (through a fake connection class, no network) with JSON fixtures, and records
 * each request (method, path, query string, parsed body) for assertions.
 */
export interface Route {
  method: string;
  /** Exact path, or a pattern. */
  path: string | RegExp;
  status: number;
  body: unknown;
  /** Answer only this many times (default unlimited). */
  times?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** JSON body, NDJSON as an array of objects, or undefined. */
  body: unknown;
}

export class FixtureRouter {
  readonly requests: RecordedRequest[] = [];
  private routes: Route[] = [];

  on(route: Route): this {
    this.routes.push({ ...route });
    return this;
  }

  reset(): void {
    this.routes = [];
    this.requests.length = 0;
  }

  /** Finds the route for a request and records it; unmatched requests answer 599 with a message. */
  handle(method: string, path: string, querystring: string | undefined, rawBody: string | undefined): { status: number; body: string } {
    const query = Object.fromEntries(new URLSearchParams(querystring ?? ''));
    this.requests.push({ method, path: decodeURIComponent(path), query, body: parseBody(rawBody) });
    const decoded = decodeURIComponent(path);
    const route = this.routes.find(
      (r) => r.method === method && (typeof r.path === 'string' ? r.path === decoded : r.path.test(decoded)) && (r.times === undefined || r.times > 0),
    );
    if (!route) return { status: 599, body: JSON.stringify({ error: `no fixture for ${method} ${decoded}` }) };
    if (route.times !== undefined) route.times -= 1;
    return { status: route.status, body: JSON.stringify(route.body) };
  }

  /** Requests other than the alias/index set-up calls. */
  dataRequests(): RecordedRequest[] {
    return this.requests.filter((r) => !r.path.startsWith('/_alias') && !(r.method === 'PUT' && /^\/[^/]+$/.test(r.path)) && r.path !== '/_aliases');
  }
}

function parseBody(raw: string | undefined): unknown {
  if (raw === undefined || raw === '') return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw
      .split('\n')
      .filter((l) => l.trim().length > 0)
      .map((l) => JSON.parse(l) as unknown);
  }
}
