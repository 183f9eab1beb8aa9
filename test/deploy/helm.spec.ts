// helm/rag: `helm lint` passes; `helm template` renders the chart for the default and the production values; the
// output validates strictly against the Kubernetes schemas (kubernetes-validate --strict for built-in kinds,
// crd-validate for ServiceMonitor/PrometheusRule) and is consistent: commands name real apps, Services, HPAs, PDBs
// and the ServiceMonitor select what exists, and every service's environment passes the platform's own config
// validation. Needs helm, kubernetes-validate and crd-validate (bash deploy/tools/install.sh helm schemas).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigSchema, loadConfig } from '@rag/platform';
import YAML from 'yaml';
import { ROOT, helmTemplate, mustRun, once, parseManifests, run, tool, validateManifests, type K8sObject } from './tools';

const SERVICES = ['loader', 'chunker', 'embedder', 'indexer', 'retriever', 'reranker', 'generator', 'gateway'];
const GRPC = new Set(['embedder', 'retriever', 'reranker', 'generator']);
// Services that use the shared state in PostgreSQL (issue 14): they get RAG_DATABASE_URL from database.existingSecret.
const DATABASE_USERS = new Set(['gateway', 'indexer', 'retriever']);
/** What the database Secret (CloudNativePG's rag-pg-app, key uri) would hold. */
const DATABASE_URI = 'postgresql://app:secret@rag-pg-rw.rag:5432/app';

interface Container {
  name: string;
  image: string;
  command?: string[];
  ports?: { name: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  livenessProbe?: { httpGet?: { path: string; port: string } };
  readinessProbe?: { httpGet?: { path: string; port: string } };
  startupProbe?: { httpGet?: { path: string; port: string } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string }[];
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
}
interface PodSpec {
  containers: Container[];
  securityContext?: Record<string, unknown>;
  volumes?: { name: string; persistentVolumeClaim?: { claimName: string }; emptyDir?: object }[];
  automountServiceAccountToken?: boolean;
  terminationGracePeriodSeconds?: number;
}
type Deployment = K8sObject & { spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } };
type Service = K8sObject & { spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] } };

const of = <T extends K8sObject>(objs: K8sObject[], kind: string) => objs.filter((o) => o.kind === kind) as T[];
const matches = (selector: Record<string, string>, labels: Record<string, string> = {}) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** The environment a container starts with: its ConfigMap and Secret (envFrom), then its own env entries. */
function containerEnv(objs: K8sObject[], c: Container, existingSecret: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    if (from.configMapRef) {
      const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === from.configMapRef!.name) as (K8sObject & { data: Record<string, string> }) | undefined;
      if (!cm) throw new Error(`${c.name}: ConfigMap ${from.configMapRef.name} is not rendered`);
      Object.assign(env, cm.data);
    }
    if (from.secretRef) {
      const s = objs.find((o) => o.kind === 'Secret' && o.metadata.name === from.secretRef!.name) as (K8sObject & { stringData: Record<string, string> }) | undefined;
      Object.assign(env, s ? s.stringData : existingSecret);
    }
  }
  for (const e of c.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef?.name === 'rag-pg-app' && e.valueFrom.secretKeyRef.key === 'uri') env[e.name] = DATABASE_URI;
  return env;
}

const CASES: { name: string; args: string[]; existingSecret: Record<string, string> }[] = [
  { name: 'default values', args: [], existingSecret: {} },
  {
    name: 'production values',
    args: ['-f', join(ROOT, 'helm/rag/values-production.yaml')],
    // what the Secret `rag-secrets` the production values point to would hold
    existingSecret: { RAG_API_KEYS: 'prod-key-1=acme', RAG_LLM_API_KEY: 'sk-test', RAG_ELASTICSEARCH_API_KEY: 'es-key' },
  },
];

describe.each(CASES)('helm chart with $name', ({ args, existingSecret, name }) => {
  const rendered = once(() => parseManifests(helmTemplate(args)));

  it('passes helm lint', () => {
    const out = mustRun(tool('helm'), ['lint', join(ROOT, 'helm/rag'), '--kube-version', '1.33.0', ...args]);
    expect(out).toContain('0 chart(s) failed');
  });

  it('renders manifests that validate strictly against the Kubernetes schemas', () => {
    const objs = rendered();
    expect(objs.length).toBeGreaterThan(20);
    const log = validateManifests(objs);
    expect(log).toMatch(/passed for resource deployment\/rag-gateway/);
  });

  it('runs each of the eight services from the one image with probes, resources and a locked-down security context', () => {
    const objs = rendered();
    const deployments = of<Deployment>(objs, 'Deployment').filter((d) => d.metadata.labels?.['app.kubernetes.io/component'] !== 'otel-collector');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(SERVICES.map((s) => `rag-${s}`).sort());
    const images = new Set<string>();
    for (const svc of SERVICES) {
      const d = deployments.find((x) => x.metadata.name === `rag-${svc}`)!;
      const pod = d.spec.template.spec;
      expect(matches(d.spec.selector.matchLabels, d.spec.template.metadata.labels), `${svc}: selector matches its pods`).toBe(true);
      const [c] = pod.containers;
      images.add(c.image);
      expect(c.command).toEqual(['node', `dist/apps/${svc}/src/main.js`]);
      expect(existsSync(join(ROOT, 'apps', svc, 'src', 'main.ts')), `apps/${svc}/src/main.ts exists`).toBe(true);
      const ports = Object.fromEntries((c.ports ?? []).map((p) => [p.name, p.containerPort]));
      expect(ports.http).toBe(8080);
      expect(ports.grpc, `${svc} gRPC port`).toBe(GRPC.has(svc) ? 50051 : undefined);
      expect(c.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(c.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
      expect(c.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
      for (const kind of ['requests', 'limits'] as const) {
        expect(c.resources?.[kind], `${svc} ${kind}`).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
      }
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      expect(pod.automountServiceAccountToken).toBe(false);
      // No pod mounts a volume that outlives it or is shared: the state is in PostgreSQL (issue 14), so every
      // Deployment can run replicas > 1 on any node.
      expect(pod.volumes?.filter((v) => v.persistentVolumeClaim && v.name !== 'models') ?? [], `${svc}: no state volume`).toEqual([]);
      expect(pod.volumes?.find((v) => v.name === 'data')?.emptyDir, `${svc}: scratch data dir`).toBeDefined();
      const db = c.env?.find((e) => e.name === 'RAG_DATABASE_URL');
      expect(db?.valueFrom?.secretKeyRef ?? null, `${svc}: database URL from the Secret`).toEqual(DATABASE_USERS.has(svc) ? { name: 'rag-pg-app', key: 'uri' } : null);
    }
    expect(of(objs, 'PersistentVolumeClaim')).toEqual([]);
    expect(images.size).toBe(1);
  });

  it("gives every service an environment the platform's config validation accepts", () => {
    const objs = rendered();
    for (const d of of<Deployment>(objs, 'Deployment').filter((x) => SERVICES.includes(x.metadata.labels?.['app.kubernetes.io/component'] ?? ''))) {
      const c = d.spec.template.spec.containers[0];
      const env = containerEnv(objs, c, existingSecret);
      expect(() => loadConfig(env), `${d.metadata.name}: ${JSON.stringify(env)}`).not.toThrow();
      const cfg = loadConfig(env);
      expect(cfg.RAG_HOST).toBe('0.0.0.0');
      expect(cfg.RAG_BUS).toBe('kafka');
      expect(cfg.RAG_VECTOR_STORE).toBe('milvus');
      expect(cfg.RAG_GRPC_PORT).toBe(GRPC.has(c.name) ? 50051 : 0);
      expect(cfg.RAG_API_KEYS || cfg.RAG_AUTH === 'required', 'API keys or required auth').toBeTruthy();
      expect(cfg.RAG_DATABASE_URL, `${c.name}: shared state in PostgreSQL`).toBe(DATABASE_USERS.has(c.name) ? DATABASE_URI : undefined);
    }
    // every key the chart sets is a real setting (a typo would be silently ignored by the services)
    const known = new Set(Object.keys(ConfigSchema.shape));
    for (const cm of of<K8sObject & { data: Record<string, string> }>(objs, 'ConfigMap').filter((x) => x.metadata.name === 'rag-env')) {
      for (const key of Object.keys(cm.data)) {
        expect(known.has(key) || key.startsWith('OTEL_'), `${key} is not in libs/platform/src/config`).toBe(true);
      }
    }
  });

  it('stops gracefully: a preStop pause, then a termination grace that covers it and the HTTP and gRPC drains', () => {
    const objs = rendered();
    for (const d of of<Deployment>(objs, 'Deployment').filter((x) => SERVICES.includes(x.metadata.labels?.['app.kubernetes.io/component'] ?? ''))) {
      const pod = d.spec.template.spec;
      const c = pod.containers[0];
      const command = c.lifecycle?.preStop?.exec?.command ?? [];
      expect(command[0], `${d.metadata.name}: preStop sleep`).toBe('sleep');
      const preStopS = Number(command[1]);
      expect(preStopS).toBeGreaterThan(0);
      const cfg = loadConfig(containerEnv(objs, c, existingSecret));
      // the HTTP drain, then (query-path services) the gRPC drain, one after the other
      expect(pod.terminationGracePeriodSeconds, d.metadata.name).toBeGreaterThan(preStopS + cfg.RAG_SHUTDOWN_GRACE_MS / 1000 + cfg.RAG_GRPC_SHUTDOWN_GRACE_MS / 1000);
    }
  });

  it('points the query path at the gRPC Services and every Service at its pods', () => {
    const objs = rendered();
    const services = of<Service>(objs, 'Service');
    const deployments = of<Deployment>(objs, 'Deployment');
    for (const s of services) {
      const targets = deployments.filter((d) => matches(s.spec.selector, d.spec.template.metadata.labels));
      expect(targets.length, `Service ${s.metadata.name} selects one Deployment`).toBe(1);
      const portNames = new Set(targets[0].spec.template.spec.containers[0].ports?.map((p) => p.name));
      for (const p of s.spec.ports) expect(portNames.has(p.targetPort), `${s.metadata.name} → ${p.targetPort}`).toBe(true);
    }
    const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'rag-env') as K8sObject & { data: Record<string, string> };
    for (const svc of GRPC) {
      const address = cm.data[`RAG_${svc.toUpperCase()}_GRPC`];
      const [host, port] = address.split(':');
      const target = services.find((s) => s.metadata.name === host.split('.')[0]);
      expect(target?.spec.ports.find((p) => p.name === 'grpc')?.port, address).toBe(Number(port));
    }
  });

  it('scales and protects what exists (HPA targets, PDB selectors)', () => {
    const objs = rendered();
    const deployments = of<Deployment>(objs, 'Deployment');
    const hpas = of<K8sObject & { spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number } }>(objs, 'HorizontalPodAutoscaler');
    expect(hpas.length).toBeGreaterThan(0);
    for (const h of hpas) {
      const d = deployments.find((x) => x.metadata.name === h.spec.scaleTargetRef.name);
      expect(d, h.metadata.name).toBeDefined();
      expect(d!.spec.replicas, `${d!.metadata.name}: replicas left to the HPA`).toBeUndefined();
      expect(h.spec.minReplicas).toBeLessThanOrEqual(h.spec.maxReplicas);
    }
    const pdbs = of<K8sObject & { spec: { selector: { matchLabels: Record<string, string> } } }>(objs, 'PodDisruptionBudget');
    expect(pdbs.length).toBe(8);
    for (const p of pdbs) {
      expect(deployments.filter((d) => matches(p.spec.selector.matchLabels, d.spec.template.metadata.labels)).length, p.metadata.name).toBe(1);
    }
  });

  if (name === 'production values') {
    it('scrapes every service with the ServiceMonitor and ships the rules and dashboards of deploy/observability', () => {
      const objs = rendered();
      const [sm] = of<K8sObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] } }>(objs, 'ServiceMonitor');
      const selected = of<Service>(objs, 'Service').filter((s) => matches(sm.spec.selector.matchLabels, s.metadata.labels));
      const appServices = selected.filter((s) => SERVICES.includes(s.metadata.labels?.['app.kubernetes.io/component'] ?? ''));
      expect(appServices.length).toBe(8);
      for (const s of appServices) expect(s.spec.ports.some((p) => p.name === sm.spec.endpoints[0].port), s.metadata.name).toBe(true);
      expect(sm.spec.endpoints[0].path).toBe('/metrics');

      const [rule] = of<K8sObject & { spec: { groups: unknown[] } }>(objs, 'PrometheusRule');
      const rulesDir = join(ROOT, 'deploy/observability/prometheus/rules');
      const fileGroups = readdirSync(rulesDir)
        .filter((f) => f.endsWith('.rules.yaml'))
        .sort()
        .flatMap((f) => (YAML.parse(readFileSync(join(rulesDir, f), 'utf8')) as { groups: unknown[] }).groups);
      expect(rule.spec.groups).toEqual(fileGroups);

      const dashDir = join(ROOT, 'deploy/observability/grafana/dashboards');
      const dashboards = of<K8sObject & { data: Record<string, string> }>(objs, 'ConfigMap').filter((c) => c.metadata.labels?.grafana_dashboard === '1');
      expect(dashboards.length).toBe(readdirSync(dashDir).filter((f) => f.endsWith('.json')).length);
      for (const c of dashboards) {
        const [[file, json]] = Object.entries(c.data);
        expect(JSON.parse(json)).toEqual(JSON.parse(readFileSync(join(dashDir, file), 'utf8')));
      }
    });

    it('runs the OpenTelemetry Collector with deploy/observability/otel-collector/config.yaml and sends traces to it', () => {
      const objs = rendered();
      const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'rag-otel-collector') as K8sObject & { data: Record<string, string> };
      expect(cm.data['config.yaml'].trim()).toBe(readFileSync(join(ROOT, 'deploy/observability/otel-collector/config.yaml'), 'utf8').trim());
      const env = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'rag-env') as K8sObject & { data: Record<string, string> };
      expect(env.data.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://rag-otel-collector:4318');
      const svc = of<Service>(objs, 'Service').find((s) => s.metadata.name === 'rag-otel-collector')!;
      expect(svc.spec.ports.find((p) => p.name === 'otlp-http')?.port).toBe(4318);
      const collector = of<Deployment>(objs, 'Deployment').find((d) => d.metadata.name === 'rag-otel-collector')!;
      const tracesEndpoint = collector.spec.template.spec.containers[0].env?.find((e) => e.name === 'TRACES_ENDPOINT')?.value;
      expect(tracesEndpoint).toBe('tempo-distributor.observability.svc:4317');
    });
  }
});

describe('helm chart: failures and strictness', () => {
  it('refuses to render without any API keys, saying what to set', () => {
    const r = run(tool('helm'), ['template', 'rag', join(ROOT, 'helm/rag'), '--kube-version', '1.33.0', '--set', 'apiKeys.generate=false']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('they need API keys');
  });

  it('refuses misspelt or mistyped values (values.schema.json)', () => {
    const helm = (...set: string[]) => run(tool('helm'), ['template', 'rag', join(ROOT, 'helm/rag'), '--kube-version', '1.33.0', ...set.flatMap((x) => ['--set', x])]);
    const typo = helm('services.gatewy.replicas=2');
    expect(typo.status).not.toBe(0);
    expect(typo.stderr).toMatch(/additional properties 'gatewy' not allowed/);
    const type = helm('serviceDefaults.replicas=two');
    expect(type.status).not.toBe(0);
    expect(type.stderr).toMatch(/replicas/);
    const key = helm('config.RAG_log_level=debug');
    expect(key.status).not.toBe(0);
    expect(key.stderr).toMatch(/RAG_log_level/);
    expect(helm('services.gateway.replicas=2').status).toBe(0);
  });

  it('refuses a distributed install that still points at a file registry or puts the database URL in plain values', () => {
    const helm = (...set: string[]) => run(tool('helm'), ['template', 'rag', join(ROOT, 'helm/rag'), '--kube-version', '1.33.0', ...set.flatMap((x) => ['--set', x])]);
    // the SQLite registry volume of earlier releases (registry.persistence) is gone: an old values file is refused
    const file = helm('registry.persistence.enabled=true', 'registry.persistence.accessModes={ReadWriteMany}');
    expect(file.status).not.toBe(0);
    expect(file.stderr).toMatch(/additional properties 'registry' not allowed/);
    const noSecret = helm('database.existingSecret=');
    expect(noSecret.status).not.toBe(0);
    expect(noSecret.stderr).toMatch(/database\/existingSecret/);
    for (const where of ['config', 'secretEnv']) {
      const plain = helm(`${where}.RAG_DATABASE_URL=postgres://u:p@db/rag`);
      expect(plain.status, where).not.toBe(0);
      expect(plain.stderr).toMatch(new RegExp(`/${where}`));
    }
    // replicas > 1 of every service render (nothing forces one node)
    expect(helm('serviceDefaults.replicas=3', 'services.gateway.autoscaling.enabled=false').status).toBe(0);
    expect(helm('database.existingSecret=my-db', 'database.secretKey=url').stdout).toContain('name: "my-db"');
  });

  it('refuses an unknown search engine', () => {
    const r = run(tool('helm'), ['template', 'rag', join(ROOT, 'helm/rag'), '--kube-version', '1.33.0', '--set', 'search.engine=solr']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/\/search\/engine.*'opensearch', 'elasticsearch'/);
  });

  describe('the validation rejects', () => {
    const samples = once(() => {
      const objs = parseManifests(helmTemplate(['--set', 'metrics.serviceMonitor.enabled=true']));
      const deployment = objs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'rag-gateway')!;
      const serviceMonitor = objs.find((o) => o.kind === 'ServiceMonitor')!;
      // the unmodified objects are valid, so each rejection below is caused by its one change
      validateManifests([deployment, serviceMonitor]);
      return { deployment, serviceMonitor };
    });
    const clone = <T>(o: T): T => structuredClone(o);

    it('an unknown field in a built-in kind', () => {
      const d = clone(samples().deployment) as Deployment;
      (d.spec.template.spec.containers[0] as unknown as Record<string, unknown>).imagePullPolicyy = 'Always';
      expect(() => validateManifests([d])).toThrow(/imagePullPolicyy/);
    });

    it('a wrong type in a built-in kind', () => {
      const d = clone(samples().deployment) as Deployment;
      (d.spec as Record<string, unknown>).replicas = 'two';
      expect(() => validateManifests([d])).toThrow(/replicas/);
    });

    it('a missing required field in a built-in kind', () => {
      const d = clone(samples().deployment) as Deployment;
      delete (d.spec as Partial<Deployment['spec']>).selector;
      expect(() => validateManifests([d])).toThrow(/selector/);
    });

    it('an unknown field and a wrong type in a ServiceMonitor', () => {
      const a = clone(samples().serviceMonitor) as K8sObject & { spec: { endpoints: Record<string, unknown>[] } };
      a.spec.endpoints[0].pathh = '/metrics';
      expect(() => validateManifests([a])).toThrow(/unknown field "spec.endpoints\[0\].pathh"/);
      const b = clone(samples().serviceMonitor) as K8sObject & { spec: { endpoints: Record<string, unknown>[] } };
      b.spec.endpoints[0].port = 8080;
      expect(() => validateManifests([b])).toThrow(/cannot unmarshal number/);
    });

    it('a kind it has no schema for', () => {
      const kafka = { apiVersion: 'kafka.strimzi.io/v1beta2', kind: 'Kafka', metadata: { name: 'x' }, spec: {} } as K8sObject;
      expect(() => validateManifests([kafka])).toThrow(/kubernetes-validate/);
      const probe = { apiVersion: 'monitoring.coreos.com/v1', kind: 'Probe', metadata: { name: 'x' }, spec: {} } as K8sObject;
      expect(() => validateManifests([probe])).toThrow(/no schema for kind "Probe"/);
    });
  });
});
