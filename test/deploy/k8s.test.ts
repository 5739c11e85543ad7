import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT, envNamesReadByCode, loadYamlDir, read } from './files.js';

const docs = loadYamlDir('deploy/k8s');
const ofKind = (kind: string) => docs.filter((d) => d.doc.kind === kind).map((d) => d.doc);
const workloads = docs.filter((d) => ['Deployment', 'StatefulSet'].includes(d.doc.kind)).map((d) => d.doc);
const byName = (kind: string, name: string) => ofKind(kind).find((d) => d.metadata.name === name);
const allContainers = (w: any): any[] => [
  ...(w.spec.template.spec.initContainers ?? []),
  ...w.spec.template.spec.containers,
];
const containerPorts = (w: any) => allContainers(w).flatMap((c) => c.ports ?? []);

/** Does a probe/service port (name or number) name a declared container port? */
function portDeclared(w: any, port: string | number): boolean {
  return containerPorts(w).some((p: any) => p.name === port || p.containerPort === port);
}

function portNumber(w: any, port: string | number): number {
  const p = containerPorts(w).find((x: any) => x.name === port || x.containerPort === port);
  return p.containerPort;
}

const SECRETISH = /(SECRET|PASSWORD|TOKEN|PRIVATE_KEY$|API_KEY)/;

describe('Kubernetes manifests', () => {
  it('parses, and every object has apiVersion, kind, name and the frognano namespace', () => {
    expect(docs.length).toBeGreaterThanOrEqual(9);
    for (const { file, doc } of docs) {
      if (doc.kind === 'Kustomization') continue;
      expect({
        file,
        apiVersion: typeof doc.apiVersion,
        kind: typeof doc.kind,
        name: typeof doc.metadata?.name,
      }).toEqual({
        file,
        apiVersion: 'string',
        kind: 'string',
        name: 'string',
      });
      if (doc.kind !== 'Namespace') expect({ file, ns: doc.metadata.namespace }).toEqual({ file, ns: 'frognano' });
    }
    for (const kind of [
      'Namespace',
      'ConfigMap',
      'Secret',
      'Service',
      'Deployment',
      'StatefulSet',
      'PersistentVolumeClaim',
    ]) {
      expect({ kind, present: ofKind(kind).length > 0 }).toEqual({ kind, present: true });
    }
  });

  it('workload selectors match their pod labels, and every Service selects a workload port that exists', () => {
    for (const w of workloads) {
      const labels = w.spec.template.metadata.labels;
      for (const [k, v] of Object.entries(w.spec.selector.matchLabels))
        expect({ w: w.metadata.name, k, v: labels[k] }).toEqual({ w: w.metadata.name, k, v });
    }
    for (const svc of ofKind('Service')) {
      const targets = workloads.filter((w) =>
        Object.entries(svc.spec.selector).every(([k, v]) => w.spec.template.metadata.labels[k] === v),
      );
      expect({ svc: svc.metadata.name, selects: targets.length }).toEqual({ svc: svc.metadata.name, selects: 1 });
      for (const p of svc.spec.ports) expect(portDeclared(targets[0], p.targetPort ?? p.port)).toBe(true);
    }
    const sts = byName('StatefulSet', 'frognano-redis');
    expect(byName('Service', sts.spec.serviceName).spec.clusterIP).toBe('None');
  });

  it('names a tagged image for every container', () => {
    for (const w of workloads) for (const c of allContainers(w)) expect(c.image).toMatch(/^[\w./-]+:[\w.-]+$/);
  });

  it('probes the app and runners on /healthz (liveness) and /readyz (readiness) at declared ports', () => {
    for (const name of ['frognano-app', 'frognano-runner']) {
      const w = byName('Deployment', name);
      const main = w.spec.template.spec.containers[0];
      expect(main.livenessProbe.httpGet.path).toBe('/healthz');
      expect(main.readinessProbe.httpGet.path).toBe('/readyz');
      for (const probe of [main.livenessProbe, main.readinessProbe, main.startupProbe].filter(Boolean)) {
        expect(portDeclared(w, probe.httpGet.port)).toBe(true);
      }
      // Prometheus scrapes /metrics on the same ops port.
      const ann = w.spec.template.metadata.annotations;
      expect(ann['prometheus.io/scrape']).toBe('true');
      expect(ann['prometheus.io/path']).toBe('/metrics');
      expect(Number(ann['prometheus.io/port'])).toBe(portNumber(w, main.livenessProbe.httpGet.port));
    }
  });

  it('gives runners a GPU, GPU nodes, the model volume and a Docker engine for sandboxes', () => {
    const r = byName('Deployment', 'frognano-runner');
    const spec = r.spec.template.spec;
    const runner = spec.containers.find((c: any) => c.name === 'runner');
    // The GPU and the checkpoint belong to the vLLM sidecar, which the runner reaches on localhost.
    const vllm = spec.initContainers.find((c: any) => c.name === 'vllm');
    expect(vllm.restartPolicy).toBe('Always');
    expect(Number(vllm.resources.limits['nvidia.com/gpu'])).toBe(1);
    expect(runner.resources.limits['nvidia.com/gpu']).toBeUndefined();
    expect(Object.keys(spec.nodeSelector).length).toBeGreaterThan(0);
    expect(spec.tolerations.some((t: any) => t.key === 'nvidia.com/gpu')).toBe(true);
    const models = spec.volumes.find((v: any) =>
      vllm.volumeMounts.some((m: any) => m.name === v.name && m.mountPath === '/models'),
    );
    expect(models.persistentVolumeClaim.claimName).toBe('frognano-models');
    expect(byName('PersistentVolumeClaim', 'frognano-models')).toBeDefined();
    const cfg = byName('ConfigMap', 'frognano-config').data;
    const arg = (name: string) => (vllm.args as string[]).find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
    expect(arg('model')!.startsWith('/models/')).toBe(true);
    for (const flag of [
      '--enable-prefix-caching',
      '--enable-auto-tool-choice',
      '--tool-call-parser=qwen3_coder',
      '--reasoning-parser=qwen3',
    ]) {
      expect(vllm.args).toContain(flag);
    }
    expect(Number(arg('max-model-len'))).toBe(65536);
    expect(vllm.startupProbe.httpGet.path).toBe('/health');
    expect(portDeclared(r, vllm.startupProbe.httpGet.port)).toBe(true);
    expect(cfg.FROGNANO_BACKEND).toBe('openai');
    expect(cfg.FROGNANO_OPENAI_BASE_URL).toBe(`http://127.0.0.1:${portNumber(r, vllm.startupProbe.httpGet.port)}/v1`);
    expect(cfg.FROGNANO_OPENAI_MODEL).toBe(arg('served-model-name'));
    expect(Number(cfg.FROGNANO_CONCURRENCY)).toBeGreaterThan(1);
    expect(Number(cfg.FROGNANO_CONCURRENCY)).toBeLessThanOrEqual(Number(arg('max-num-seqs')));
    // docker-in-docker sidecar reachable only through a shared unix socket; the work dir at the same path in both.
    const dind = spec.initContainers.find((c: any) => c.name === 'dind');
    expect(dind.restartPolicy).toBe('Always');
    const dockerHost = runner.env.find((e: any) => e.name === 'DOCKER_HOST').value as string;
    expect(dockerHost).toMatch(/^unix:\/\//);
    const socketDir = path.posix.dirname(dockerHost.replace('unix://', ''));
    const mountOf = (c: any, dir: string) => c.volumeMounts.find((m: any) => m.mountPath === dir)?.name;
    expect(mountOf(dind, socketDir)).toBeDefined();
    expect(mountOf(runner, socketDir)).toBe(mountOf(dind, socketDir));
    expect(mountOf(runner, cfg.FROGNANO_WORK_DIR)).toBe(mountOf(dind, cfg.FROGNANO_WORK_DIR));
    expect(dind.env.find((e: any) => e.name === 'DOCKER_TLS_CERTDIR').value).toBe('');
    // A runner outlives its shutdown grace, so it can hand its job back before SIGKILL.
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(Number(cfg.FROGNANO_SHUTDOWN_GRACE_SECONDS));
  });

  it('runs app and runner containers as non-root with no privilege escalation', () => {
    for (const name of ['frognano-app', 'frognano-runner']) {
      const w = byName('Deployment', name);
      const podSec = w.spec.template.spec.securityContext ?? {};
      const c = w.spec.template.spec.containers[0];
      const sec = { ...podSec, ...c.securityContext };
      expect(sec.runAsNonRoot).toBe(true);
      expect(sec.runAsUser).not.toBe(0);
      expect(c.securityContext.allowPrivilegeEscalation).toBe(false);
      expect(c.securityContext.privileged).toBeUndefined();
    }
  });

  it('keeps secrets out of the manifests: placeholders in the template only, secret env from secretKeyRef', () => {
    const all = readdirSync(path.join(ROOT, 'deploy/k8s'))
      .map((f) => read(`deploy/k8s/${f}`))
      .join('\n');
    expect(all).not.toMatch(/-----BEGIN [A-Z ]*PRIVATE KEY-----/);
    expect(all).not.toMatch(/gh[pousr]_[A-Za-z0-9]{20,}/);
    const secrets = ofKind('Secret');
    expect(secrets).toHaveLength(1);
    for (const v of Object.values(secrets[0].stringData ?? {})) expect(v).toMatch(/^REPLACE_WITH_/);
    expect(secrets[0].data).toBeUndefined();
    const keys = new Set(Object.keys(secrets[0].stringData));
    for (const w of workloads) {
      for (const c of allContainers(w)) {
        for (const e of c.env ?? []) {
          if (SECRETISH.test(e.name))
            expect({ c: c.name, e: e.name, inline: e.value !== undefined }).toEqual({
              c: c.name,
              e: e.name,
              inline: false,
            });
          if (e.valueFrom?.secretKeyRef) expect(keys.has(e.valueFrom.secretKeyRef.key)).toBe(true);
        }
      }
      for (const v of w.spec.template.spec.volumes ?? []) {
        for (const item of v.secret?.items ?? []) expect(keys.has(item.key)).toBe(true);
      }
    }
    for (const key of Object.keys(byName('ConfigMap', 'frognano-config').data)) expect(key).not.toMatch(SECRETISH);
  });

  it('kustomization lists every manifest except the secret template', () => {
    const k = docs.find((d) => d.doc.kind === 'Kustomization')!.doc;
    const files = readdirSync(path.join(ROOT, 'deploy/k8s')).filter(
      (f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml',
    );
    expect([...k.resources].sort()).toEqual(files.filter((f) => f !== 'secret.template.yaml').sort());
    const images = new Set(workloads.flatMap((w) => allContainers(w).map((c) => c.image.split(':')[0])));
    for (const i of k.images) expect(images.has(i.name)).toBe(true);
  });

  it('every ConfigMap/env variable the manifests set is one the code reads', () => {
    const cfg = byName('ConfigMap', 'frognano-config').data;
    const names = new Set<string>(Object.keys(cfg));
    for (const w of workloads) for (const c of allContainers(w)) for (const e of c.env ?? []) names.add(e.name);
    const known = envNamesReadByCode();
    // Read by tools rather than our code: Node, Docker, Probot's server, vLLM.
    const external = new Set([
      'NODE_ENV',
      'DOCKER_HOST',
      'DOCKER_TLS_CERTDIR',
      'HOME',
      'TMPDIR',
      'HOST',
      'PORT',
      'APP_ID',
      'WEBHOOK_SECRET',
      'PRIVATE_KEY_PATH',
      'LOG_LEVEL',
      'HF_HUB_OFFLINE',
    ]);
    for (const n of names)
      if (!external.has(n)) expect({ n, readByCode: known.has(n) }).toEqual({ n, readByCode: true });
  });
});

describe('Prometheus alert rules', () => {
  it('parse, and use only metrics the app and runners expose', async () => {
    const { FrognanoMetrics } = await import('../../src/ops/metrics.js');
    const m = new FrognanoMetrics({ defaultMetrics: false });
    m.bindQueue({ getJobCounts: async () => ({}) });
    const exposed = (await m.render()).body;
    const [file] = loadYamlDir('deploy/prometheus');
    const rules = file.doc.groups.flatMap((g: any) => g.rules);
    expect(rules.length).toBeGreaterThan(0);
    for (const r of rules) {
      expect(r.alert).toMatch(/^Frognano[A-Za-z]+$/);
      expect(typeof r.expr).toBe('string');
      for (const [name] of r.expr.matchAll(/\bfrognano_[a-z_]+\b/g)) {
        // A histogram's _bucket/_sum/_count series belong to the metric its TYPE line names.
        const base = exposed.includes(`# TYPE ${name} `) ? name : name.replace(/_(bucket|sum|count)$/, '');
        expect({ name, exposed: exposed.includes(`# TYPE ${base} `) }).toEqual({ name, exposed: true });
      }
    }
  });
});
