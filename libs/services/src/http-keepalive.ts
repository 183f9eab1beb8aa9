import type { Server } from 'node:http';

/**
 * Node closes an idle keep-alive connection after 5 s. A client or load balancer that reuses the connection at
 * that moment gets "socket closed" on a request the service never saw (seen in the outage tests, and the classic
 * 502 behind cloud load balancers, whose idle timeout is 60 s). Keep idle connections longer than that, and the
 * header timeout above it, as Node's documentation requires.
 */
export function keepConnectionsAlive(server: Server, idleMs = 65_000): void {
  server.keepAliveTimeout = idleMs;
  server.headersTimeout = idleMs + 1_000;
}
