import { join } from 'node:path';
import {
  Client,
  credentials,
  Metadata,
  status,
  type handleServerStreamingCall,
  type handleUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** grpc.health.v1 (health.proto beside this file), loaded with proto-loader; enums as their names. */
export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
export interface HealthCheckRequest {
  service: string;
}
export interface HealthCheckResponse {
  status: ServingStatus;
}

type Method = protoLoader.MethodDefinition<HealthCheckRequest, HealthCheckResponse>;
export interface HealthImplementation extends UntypedServiceImplementation {
  Check: handleUnaryCall<HealthCheckRequest, HealthCheckResponse>;
  Watch: handleServerStreamingCall<HealthCheckRequest, HealthCheckResponse>;
}

let loaded: { check: Method; watch: Method } | undefined;
function methods(): { check: Method; watch: Method } {
  if (!loaded) {
    const def = protoLoader.loadSync(join(__dirname, 'health.proto'), { keepCase: true, enums: String, defaults: true });
    const svc = def['grpc.health.v1.Health'] as protoLoader.ServiceDefinition;
    loaded = { check: svc.Check as unknown as Method, watch: svc.Watch as unknown as Method };
  }
  return loaded;
}

/** The service definition to add to a grpc-js server. */
export function healthServiceDefinition(): ServiceDefinition<HealthImplementation> {
  const { check, watch } = methods();
  return { Check: check, Watch: watch } as unknown as ServiceDefinition<HealthImplementation>;
}

/**
 * Serving status per service name ('' = the whole server). Check answers NOT_FOUND for an unknown name, as the
 * protocol asks; Watch streams every change until the caller goes away.
 */
export class HealthService {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Set<{ service: string; call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse> }>();

  constructor(initial: Record<string, ServingStatus> = { '': 'SERVING' }) {
    for (const [k, v] of Object.entries(initial)) this.statuses.set(k, v);
  }

  set(service: string, s: ServingStatus): void {
    this.statuses.set(service, s);
    for (const w of this.watchers) if (w.service === service) w.call.write({ status: s });
  }

  /** Everything NOT_SERVING (graceful shutdown: load balancers stop routing before the port closes). */
  shutdown(): void {
    for (const k of this.statuses.keys()) this.set(k, 'NOT_SERVING');
    for (const w of this.watchers) w.call.end();
    this.watchers.clear();
  }

  get(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  implementation(): HealthImplementation {
    return {
      Check: (call, callback) => {
        const s = this.statuses.get(call.request.service ?? '');
        if (s === undefined) callback({ code: status.NOT_FOUND, details: `unknown service ${call.request.service}` }, null);
        else callback(null, { status: s });
      },
      Watch: (call) => {
        const service = call.request.service ?? '';
        const w = { service, call };
        this.watchers.add(w);
        call.on('cancelled', () => this.watchers.delete(w));
        call.write({ status: this.statuses.get(service) ?? 'SERVICE_UNKNOWN' });
      },
    };
  }
}

/** One health Check against a gRPC server (the launcher, tests, probes). */
export function checkHealth(address: string, service = '', deadlineMs = 2_000): Promise<ServingStatus> {
  const { check } = methods();
  const client = new Client(address, credentials.createInsecure());
  return new Promise<ServingStatus>((resolve, reject) => {
    client.makeUnaryRequest<HealthCheckRequest, HealthCheckResponse>(
      check.path,
      check.requestSerialize,
      check.responseDeserialize,
      { service },
      new Metadata(),
      { deadline: Date.now() + deadlineMs },
      (err, res) => {
        client.close();
        if (err) reject(err);
        else resolve(res?.status ?? 'UNKNOWN');
      },
    );
  });
}
