import { loadYamlDir } from './files.js';

/**
 * Validates each manifest against the Kubernetes OpenAPI schema (kubernetes-models, offline): field
 * types, enums and required fields. Unknown fields are not rejected by those schemas; the structural
 * checks in k8s.test.ts cover the fields the deployment depends on.
 */
async function modelFor(apiVersion: string, kind: string): Promise<new (data: unknown) => { validate(): void }> {
  const group = apiVersion === 'v1' ? 'v1' : apiVersion; // apps/v1 -> kubernetes-models/apps/v1/...
  const mod = (await import(`kubernetes-models/${group}/${kind}`)) as Record<
    string,
    new (data: unknown) => { validate(): void }
  >;
  const Model = mod[kind];
  if (!Model) throw new Error(`no schema for ${apiVersion} ${kind}`);
  return Model;
}

describe('Kubernetes manifests against the API schema', () => {
  const docs = loadYamlDir('deploy/k8s').filter((d) => d.doc.kind !== 'Kustomization');

  it('every object is valid for its apiVersion and kind', async () => {
    const problems: string[] = [];
    for (const { file, doc } of docs) {
      const Model = await modelFor(doc.apiVersion, doc.kind);
      try {
        new Model(doc).validate();
      } catch (err) {
        problems.push(`${file} ${doc.kind}/${doc.metadata.name}: ${(err as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('the schema check does reject a wrong manifest', async () => {
    const runner = structuredClone(
      docs.find((d) => d.doc.metadata.name === 'frognano-runner' && d.doc.kind === 'Deployment')!.doc,
    );
    runner.spec.template.spec.containers[0].ports[0].containerPort = '9464'; // a string where an integer belongs
    delete runner.spec.selector;
    const Model = await modelFor(runner.apiVersion, runner.kind);
    expect(() => new Model(runner).validate()).toThrow(/containerPort must be integer|selector/);
  });
});
