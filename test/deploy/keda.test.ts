import { spawnSync } from 'node:child_process';
import { parse, parseAllDocuments } from 'yaml';
import Ajv from 'ajv';
import { FrognanoMetrics } from '../../src/ops/metrics.js';
import { loadYamlDir, read } from './files.js';

/**
 * The KEDA overlay (deploy/k8s-keda): its objects against KEDA's own CRD schemas (test/deploy/fixtures/keda, kept in
 * the repository: nothing is fetched), and the settings that make scaling safe for GPU runners.
 */
type Validate = ((d: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };

/**
 * A CRD's openAPIV3Schema as a JSON schema. Kubernetes drops unknown fields of a structural schema without a word,
 * so a misspelt field would do nothing: here every object that lists its properties rejects others.
 */
function crdValidator(file: string): Validate {
  const crd = parse(read(`test/deploy/fixtures/keda/${file}`));
  const version = crd.spec.versions.find((v: any) => v.storage);
  const close = (n: any): void => {
    if (!n || typeof n !== 'object') return;
    if (
      n.type === 'object' &&
      n.properties &&
      n.additionalProperties === undefined &&
      !n['x-kubernetes-preserve-unknown-fields']
    ) {
      n.additionalProperties = false;
    }
    Object.values(n).forEach(close);
  };
  const schema = structuredClone(version.schema.openAPIV3Schema);
  close(schema);
  const AjvClass = ((Ajv as unknown as { default?: unknown }).default ?? Ajv) as new (o: object) => {
    compile(s: object): Validate;
  };
  return new AjvClass({ strict: false, allErrors: true, validateFormats: false }).compile(schema);
}

function problems(validate: Validate, doc: unknown): string[] {
  return validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

const overlay = loadYamlDir('deploy/k8s-keda');
const base = loadYamlDir('deploy/k8s');
const find = (docs: { doc: any }[], kind: string, name?: string) =>
  docs.map((d) => d.doc).find((d) => d.kind === kind && (name === undefined || d.metadata?.name === name));
const scaledObject = find(overlay, 'ScaledObject');
const kustomization = find(overlay, 'Kustomization');
const baseRunner = find(base, 'Deployment', 'frognano-runner');
const baseConfig = find(base, 'ConfigMap', 'frognano-config').data;
const overlayConfig = find(overlay, 'ConfigMap', 'frognano-config').data;
const runnerPatch = find(overlay, 'Deployment', 'frognano-runner');

describe('KEDA overlay: schema', () => {
  const validateScaledObject = crdValidator('keda.sh_scaledobjects.yaml');

  it("the ScaledObject is valid for KEDA's CRD (v2.20.2)", () => {
    expect(scaledObject.apiVersion).toBe('keda.sh/v1alpha1');
    expect(problems(validateScaledObject, scaledObject)).toEqual([]);
  });

  it('the TriggerAuthentication example in docs/operating-at-scale.md is valid for its CRD', () => {
    const docs = read('docs/operating-at-scale.md');
    const blocks = [...docs.matchAll(/```yaml\n([\s\S]*?)```/g)].flatMap((m) =>
      parseAllDocuments(m[1]!).map((d) => d.toJS()),
    );
    const auth = blocks.find((b) => b?.kind === 'TriggerAuthentication');
    expect(auth).toBeDefined();
    expect(problems(crdValidator('keda.sh_triggerauthentications.yaml'), auth)).toEqual([]);
  });

  it('the schema check does reject a wrong ScaledObject (misspelt field, string count, no target)', () => {
    const wrong = structuredClone(scaledObject);
    wrong.spec.cooldownPeriods = 10;
    wrong.spec.maxReplicaCount = '8';
    delete wrong.spec.scaleTargetRef;
    const found = problems(validateScaledObject, wrong).join('\n');
    expect(found).toMatch(/must NOT have additional properties/);
    expect(found).toMatch(/maxReplicaCount must be integer/);
    expect(found).toMatch(/must have required property 'scaleTargetRef'/);
  });
});

describe('KEDA overlay: scaling the GPU runners safely', () => {
  it('includes the base, the ScaledObject and its patches, and leaves the replica count to KEDA', () => {
    expect(kustomization.resources).toEqual(['../k8s', 'scaledobject.yaml']);
    const patchFiles = kustomization.patches.filter((p: any) => p.path).map((p: any) => p.path);
    expect(patchFiles.sort()).toEqual(['configmap-shutdown.yaml', 'runner-termination.yaml']);
    const inline = kustomization.patches.find((p: any) => p.patch);
    expect(inline.target).toMatchObject({ kind: 'Deployment', name: 'frognano-runner' });
    expect(parse(inline.patch)).toEqual([{ op: 'remove', path: '/spec/replicas' }]);
  });

  it("scales the runner Deployment from zero on the bot's backlog metric, through Prometheus", async () => {
    expect(scaledObject.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: baseRunner.metadata.name,
    });
    expect(scaledObject.spec.minReplicaCount).toBe(0);
    const [trigger] = scaledObject.spec.triggers;
    expect(trigger.type).toBe('prometheus');
    expect(trigger.metadata.activationThreshold).toBe('0');
    // One runner per FROGNANO_CONCURRENCY jobs.
    expect(trigger.metadata.threshold).toBe(baseConfig.FROGNANO_CONCURRENCY);
    // The query reads metrics the app really exports.
    const m = new FrognanoMetrics({ defaultMetrics: false });
    m.bindQueue({ getJobCounts: async () => ({ waiting: 1, prioritized: 2 }) });
    const exposed = (await m.render()).body;
    const names = [...String(trigger.metadata.query).matchAll(/\b(frognano_[a-z_]+)/g)].map((x) => x[1]!);
    expect(names).toContain('frognano_queue_backlog');
    for (const n of names) expect({ n, exposed: exposed.includes(`# TYPE ${n} `) }).toEqual({ n, exposed: true });
  });

  it('waits longer than a model load before scaling to zero', () => {
    const budget = (probe: any) => (probe ? (probe.periodSeconds ?? 10) * (probe.failureThreshold ?? 3) : 0);
    const containers = [
      ...(baseRunner.spec.template.spec.initContainers ?? []),
      ...baseRunner.spec.template.spec.containers,
    ];
    const modelLoadSeconds = Math.max(...containers.map((c: any) => budget(c.startupProbe)));
    expect(modelLoadSeconds).toBeGreaterThanOrEqual(600); // the vLLM sidecar's 10 minutes
    expect(scaledObject.spec.cooldownPeriod).toBeGreaterThan(modelLoadSeconds);
    expect(scaledObject.spec.initialCooldownPeriod).toBeGreaterThan(modelLoadSeconds);
  });

  it('never kills a running round on scale-down: grace periods outlast the longest job', () => {
    const jobLimitSeconds = Number(overlayConfig.FROGNANO_SANDBOX_JOB_TIMEOUT_MS) / 1000;
    expect(jobLimitSeconds).toBeGreaterThan(0);
    const shutdownGrace = Number(overlayConfig.FROGNANO_SHUTDOWN_GRACE_SECONDS);
    expect(shutdownGrace).toBeGreaterThanOrEqual(jobLimitSeconds + 5 * 60); // and time to publish
    const podGrace = runnerPatch.spec.template.spec.terminationGracePeriodSeconds;
    expect(podGrace).toBeGreaterThanOrEqual(shutdownGrace + 60); // the runner's own exit after its wait
    expect(podGrace).toBeGreaterThan(baseRunner.spec.template.spec.terminationGracePeriodSeconds);
  });

  const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
  (kubectl ? it : it.skip)(
    'kubectl kustomize builds it: base objects, patched runner and ConfigMap, the ScaledObject',
    () => {
      const out = spawnSync('kubectl', ['kustomize', 'deploy/k8s-keda'], { encoding: 'utf8', timeout: 60_000 });
      expect(out.stderr).toBe('');
      const built = parseAllDocuments(out.stdout).map((d) => d.toJS());
      const runner = built.find((d) => d.kind === 'Deployment' && d.metadata.name === 'frognano-runner');
      expect(runner.spec.replicas).toBeUndefined();
      expect(runner.spec.template.spec.terminationGracePeriodSeconds).toBe(
        runnerPatch.spec.template.spec.terminationGracePeriodSeconds,
      );
      expect(runner.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['runner']); // the patch merged, not replaced
      const config = built.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'frognano-config').data;
      expect(config).toMatchObject({ ...baseConfig, ...overlayConfig });
      expect(built.filter((d) => d.kind === 'ScaledObject')).toHaveLength(1);
      for (const d of built) if (d.kind !== 'Namespace') expect(d.metadata.namespace).toBe('frognano');
    },
  );
});
