// deploy/k8s: the kustomize overlays build (kustomize v5 rendering helm/rag through its Helm support) and their
// output validates strictly against the Kubernetes schemas. Needs kustomize, helm, kubernetes-validate and
// crd-validate (bash deploy/tools/install.sh all).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '@rag/platform';
import YAML from 'yaml';
import { ROOT, mustRun, once, parseManifests, tool, validateManifests, type K8sObject } from './tools';

function build(overlay: string): K8sObject[] {
  const out = mustRun(tool('kustomize'), [
    'build',
    '--enable-helm',
    '--helm-command',
    tool('helm'),
    // the chart lives in helm/rag, outside the overlay folders
    '--load-restrictor',
    'LoadRestrictionsNone',
    join(ROOT, 'deploy/k8s/overlays', overlay),
  ]);
  return parseManifests(out);
}

type Deployment = K8sObject & { spec: { replicas?: number; template: { spec: { containers: { name: string; resources: { requests: Record<string, string> }; envFrom: { configMapRef?: { name: string }; secretRef?: { name: string } }[]; env: { name: string; value?: string }[] }[] } } } };

describe('kustomize overlay dev', () => {
  const rendered = once(() => build('dev'));

  it('builds and validates strictly', () => {
    const objs = rendered();
    expect(objs.length).toBeGreaterThan(20);
    validateManifests(objs);
  });

  it('puts everything in rag-dev, one replica each, small requests, no autoscaling', () => {
    const objs = rendered();
    for (const o of objs) {
      if (o.kind === 'Namespace') expect(o.metadata.name).toBe('rag-dev');
      else expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe('rag-dev');
    }
    expect(objs.filter((o) => o.kind === 'HorizontalPodAutoscaler')).toEqual([]);
    const deployments = objs.filter((o) => o.kind === 'Deployment') as Deployment[];
    expect(deployments.length).toBe(8);
    for (const d of deployments) {
      expect(d.spec.replicas).toBe(1);
      expect(d.spec.template.spec.containers[0].resources.requests.cpu).toBe('50m');
    }
  });

  it("provides the Secret the chart references, and the environment passes the platform's config validation", () => {
    const objs = rendered();
    const secret = objs.find((o) => o.kind === 'Secret' && o.metadata.name === 'rag-secrets') as K8sObject & { data: Record<string, string> };
    expect(secret).toBeDefined();
    const database = objs.find((o) => o.kind === 'Secret' && o.metadata.name === 'rag-pg-app') as K8sObject & { data: Record<string, string> };
    expect(database, 'the database Secret the gateway, indexer and retriever read').toBeDefined();
    const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'rag-env') as K8sObject & { data: Record<string, string> };
    for (const d of objs.filter((o) => o.kind === 'Deployment') as Deployment[]) {
      const c = d.spec.template.spec.containers[0];
      expect(c.envFrom.map((e) => e.configMapRef?.name ?? e.secretRef?.name)).toEqual(['rag-env', 'rag-secrets']);
      const env: Record<string, string> = { ...cm.data };
      for (const [k, v] of Object.entries(secret.data)) env[k] = Buffer.from(v, 'base64').toString('utf8');
      for (const e of c.env) if (e.value !== undefined) env[e.name] = e.value;
      for (const e of c.env as { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[]) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) env[e.name] = Buffer.from(objs.find((o) => o.kind === 'Secret' && o.metadata.name === ref.name) ? database.data[ref.key]! : '', 'base64').toString('utf8');
      }
      expect(() => loadConfig(env), d.metadata.name).not.toThrow();
      expect(loadConfig(env).RAG_DATABASE_URL, d.metadata.name).toBe(['rag-gateway', 'rag-indexer', 'rag-retriever'].includes(d.metadata.name) ? 'postgresql://app:dev-password-change-me@rag-pg-rw:5432/app' : undefined);
    }
  });
});

describe('kustomize overlay production', () => {
  const rendered = once(() => build('production'));

  it('builds and validates strictly (including the ServiceMonitor and PrometheusRule)', () => {
    const objs = rendered();
    expect(objs.some((o) => o.kind === 'ServiceMonitor')).toBe(true);
    expect(objs.some((o) => o.kind === 'PrometheusRule')).toBe(true);
    validateManifests(objs);
  });

  it('adds network policies that select the release pods, and labels everything production', () => {
    const objs = rendered();
    const policies = objs.filter((o) => o.kind === 'NetworkPolicy') as (K8sObject & { spec: { podSelector: { matchLabels: Record<string, string> } } })[];
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(['rag-allow-ingress-controller', 'rag-allow-prometheus', 'rag-allow-within-release', 'rag-default-deny-ingress']);
    const podLabels = (objs.filter((o) => o.kind === 'Deployment') as (Deployment & { spec: { template: { metadata: { labels: Record<string, string> } } } })[]).map((d) => d.spec.template.metadata.labels);
    for (const p of policies) {
      const selected = podLabels.filter((l) => Object.entries(p.spec.podSelector.matchLabels).every(([k, v]) => l[k] === v));
      expect(selected.length, p.metadata.name).toBeGreaterThan(0);
    }
    for (const o of objs) expect(o.metadata.labels?.environment, `${o.kind}/${o.metadata.name}`).toBe('production');
  });

  it('autoscales the services and spreads them over zones', () => {
    const objs = rendered();
    expect(objs.filter((o) => o.kind === 'HorizontalPodAutoscaler').length).toBe(8);
    const gateway = objs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'rag-gateway') as K8sObject & { spec: { template: { spec: { topologySpreadConstraints: { topologyKey: string }[] } } } };
    expect(gateway.spec.template.spec.topologySpreadConstraints.map((t) => t.topologyKey)).toContain('topology.kubernetes.io/zone');
  });
});

describe('deploy/k8s/dependencies', () => {
  const dir = join(ROOT, 'deploy/k8s/dependencies');
  const read = (file: string) => parseManifests(readFileSync(join(dir, file), 'utf8'));
  const values = (file: string) => YAML.parse(readFileSync(join(ROOT, file), 'utf8')) as Record<string, Record<string, string>>;
  const defaults = values('helm/rag/values.yaml');
  const production = values('helm/rag/values-production.yaml');

  it("name Kafka, Elasticsearch, Milvus and OpenSearch so the chart's endpoints find them", () => {
    const kafka = read('strimzi-kafka.yaml').find((o) => o.kind === 'Kafka')!;
    const pools = read('strimzi-kafka.yaml').filter((o) => o.kind === 'KafkaNodePool');
    expect(pools.every((p) => p.metadata.labels?.['strimzi.io/cluster'] === kafka.metadata.name)).toBe(true);
    // Strimzi names the bootstrap Service <cluster>-kafka-bootstrap
    const bootstrap = `${kafka.metadata.name}-kafka-bootstrap`;
    expect(defaults.kafka.brokers.split('.')[0].split(':')[0]).toBe(bootstrap);
    expect(production.kafka.brokers.split('.')[0]).toBe(bootstrap);
    const listener = (kafka as unknown as { spec: { kafka: { listeners: { port: number; tls: boolean }[] } } }).spec.kafka.listeners.find((l) => !l.tls)!;
    expect(defaults.kafka.brokers.endsWith(`:${listener.port}`)).toBe(true);

    // ECK names the HTTP Service <name>-es-http
    const es = read('eck-elasticsearch.yaml').find((o) => o.kind === 'Elasticsearch')!;
    expect(production.search.engine).toBe('elasticsearch');
    expect(new URL(production.search.url).hostname.split('.')[0]).toBe(`${es.metadata.name}-es-http`);
    expect(new URL(production.search.url).protocol).toBe('http:'); // matches the TLS-off HTTP layer above

    // the Milvus chart's proxy Service is named after the release, `milvus`
    expect(defaults.milvus.address).toBe('milvus:19530');
    const milvus = YAML.parse(readFileSync(join(dir, 'milvus-values.yaml'), 'utf8')) as { externalKafka: { brokerList: string } };
    expect(milvus.externalKafka.brokerList.split('.')[0]).toBe(bootstrap);

    // the OpenSearch chart's Service is <clusterName>-<nodeGroup>
    const os = YAML.parse(readFileSync(join(dir, 'opensearch-values.yaml'), 'utf8')) as { clusterName: string; nodeGroup: string };
    expect(new URL(defaults.search.url).hostname).toBe(`${os.clusterName}-${os.nodeGroup}`);
  });

  it("name the PostgreSQL of the shared state so the chart's database Secret is the one CloudNativePG writes", () => {
    const cluster = read('cnpg-cluster.yaml').find((o) => o.kind === 'Cluster') as K8sObject & {
      apiVersion: string;
      spec: { instances: number; bootstrap: { initdb: { database: string; owner: string } }; postgresql: { parameters: Record<string, string> } };
    };
    expect(cluster.apiVersion).toBe('postgresql.cnpg.io/v1');
    // CloudNativePG writes the application user's credentials, with a `uri`, to the Secret <cluster>-app
    for (const v of [defaults, production]) expect(v.database).toMatchObject({ existingSecret: `${cluster.metadata.name}-app`, secretKey: 'uri' });
    expect(cluster.spec.instances).toBeGreaterThanOrEqual(3);
    // room for every database user's pool at the production replica ceiling (gateway, indexer, retriever HPAs)
    const prod = YAML.parse(readFileSync(join(ROOT, 'helm/rag/values-production.yaml'), 'utf8')) as {
      database: { poolMax: number };
      serviceDefaults: { autoscaling: { maxReplicas: number } };
      services: Record<string, { autoscaling?: { maxReplicas?: number } }>;
    };
    const pods = ['gateway', 'indexer', 'retriever'].reduce((n, s) => n + (prod.services[s]?.autoscaling?.maxReplicas ?? prod.serviceDefaults.autoscaling.maxReplicas), 0);
    expect(Number(cluster.spec.postgresql.parameters.max_connections)).toBeGreaterThanOrEqual(pods * prod.database.poolMax + 10);
  });
});
