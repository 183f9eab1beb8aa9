import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import YAML from 'yaml';

export const ROOT = resolve(__dirname, '../..');
const TOOLS_BIN = join(process.env.RAG_TOOLS_DIR ? resolve(process.env.RAG_TOOLS_DIR) : join(ROOT, '.local/tools'), 'bin');

const INSTALL: Record<string, string> = {
  promtool: 'prometheus',
  helm: 'helm',
  kustomize: 'kustomize',
  'kubernetes-validate': 'schemas',
  'crd-validate': 'schemas',
  'otelcol-rag': 'otelcol',
};

/**
 * Path of a tool installed by deploy/tools/install.sh (.local/tools/bin), else from PATH. A missing tool is an
 * error that says how to install it: these checks never skip silently.
 */
export function tool(name: keyof typeof INSTALL | string): string {
  const local = join(TOOLS_BIN, name);
  if (existsSync(local)) return local;
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
  throw new Error(
    `${name} is not installed (looked in ${TOOLS_BIN} and on PATH): run \`bash deploy/tools/install.sh ${INSTALL[name] ?? 'all'}\``,
  );
}

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

export function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): RunResult {
  const r = spawnSync(cmd, args, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Runs a command that must succeed; on failure the error carries its output. */
export function mustRun(cmd: string, args: string[], opts: { cwd?: string } = {}): string {
  const r = run(cmd, args, opts);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `rag-deploy-${prefix}-`));
}

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } } & Record<string, unknown>;

/** Parses rendered manifests as Kubernetes does: YAML 1.1, where an unquoted `off`, `yes` or `on` is a boolean. */
export function parseManifests(text: string): K8sObject[] {
  return YAML.parseAllDocuments(text, { version: '1.1' })
    .map((d) => {
      if (d.errors.length) throw new Error(`invalid YAML: ${d.errors.map((e) => e.message).join('; ')}`);
      return d.toJS() as K8sObject | null;
    })
    .filter((d): d is K8sObject => d !== null && typeof d === 'object');
}

const CRD_GROUPS = ['monitoring.coreos.com/'];

/**
 * Objects as a YAML stream of JSON documents: JSON reads the same in YAML 1.1 (the validators) and 1.2 (the `yaml`
 * package), whereas a plain-YAML `off` or `yes` string would turn into a boolean on the way.
 */
function asYamlStream(objects: K8sObject[]): string {
  return objects.map((o) => JSON.stringify(o)).join('\n---\n') + '\n';
}

/**
 * Validates rendered manifests against the Kubernetes schemas, strictly (unknown fields and wrong types are errors):
 * built-in kinds with kubernetes-validate --strict (its bundled JSON schemas for `kubeVersion`), prometheus-operator
 * kinds with crd-validate (the operator's Go types). Any other apiVersion is an error: nothing passes unchecked.
 * Returns the validators' output; throws with it when anything is invalid.
 */
export function validateManifests(objects: K8sObject[], kubeVersion = '1.33'): string {
  const dir = tempDir('validate');
  const core = objects.filter((o) => !CRD_GROUPS.some((g) => o.apiVersion.startsWith(g)));
  const crds = objects.filter((o) => CRD_GROUPS.some((g) => o.apiVersion.startsWith(g)));
  let log = '';
  const problems: string[] = [];
  if (core.length) {
    const file = join(dir, 'core.yaml');
    writeFileSync(file, asYamlStream(core));
    const r = run(tool('kubernetes-validate'), ['--strict', '-k', kubeVersion, file]);
    log += r.stdout + r.stderr;
    const passed = r.stdout.split('\n').filter((l) => l.startsWith('INFO') && l.includes(' passed for resource ')).length;
    // A WARN is a kind without a schema: that must fail, not pass.
    const bad = (r.stdout + r.stderr).split('\n').filter((l) => /^(ERROR|WARN|FATAL)/.test(l));
    if (r.status !== 0 || bad.length || passed !== core.length) {
      problems.push(`kubernetes-validate (exit ${r.status}, ${passed}/${core.length} passed):\n${bad.join('\n') || r.stdout + r.stderr}`);
    }
  }
  if (crds.length) {
    const file = join(dir, 'crds.yaml');
    writeFileSync(file, asYamlStream(crds));
    const r = run(tool('crd-validate'), [file]);
    log += r.stdout + r.stderr;
    const passed = r.stdout.split('\n').filter((l) => l.startsWith('OK ')).length;
    if (r.status !== 0 || passed !== crds.length) {
      problems.push(`crd-validate (exit ${r.status}, ${passed}/${crds.length} passed):\n${r.stdout}${r.stderr}`);
    }
  }
  if (problems.length) throw new Error(`manifests do not validate:\n${problems.join('\n')}`);
  return log;
}

export function helmTemplate(args: string[]): string {
  return mustRun(tool('helm'), ['template', 'rag', join(ROOT, 'helm/rag'), '--namespace', 'rag', '--kube-version', '1.33.0', ...args]);
}

/**
 * A value computed on first use and kept (a render shared by several tests). Used instead of beforeAll so that a
 * missing tool fails each test with its message (counted as failures) rather than skipping them.
 */
export function once<T>(make: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) {
      value = make();
      done = true;
    }
    return value;
  };
}
