// Import rules for `npm run lint` (dependency-cruiser: one config holds both the layer order and the cycle check,
// and it reads TypeScript imports without an eslint setup the project does not otherwise have).
//
// The layers (DESIGN.md "Layers"; docs/architecture.md explains them), lowest first. A module may import its own
// unit and any unit of a LOWER entry, never an equal or higher one: imports point down only. Inside DESIGN.md's
// layers the order is the one the code follows: util is below everything; leaf drives inference, not the reverse.
// `src/ops` (logger, metrics, health server) imports only util and is imported only by app, runner and cli, so it
// sits in the bottom layer above util. The top-level `runner/` (the worker's entry point) is part of the runner unit.
const LAYERS = [
  { util: ['src/util/'] },
  { queue: ['src/queue/'], sandbox: ['src/sandbox/'], ops: ['src/ops/'] },
  { inference: ['src/inference/'] },
  { leaf: ['src/leaf/'] },
  // verify: the verdict on a change, measured in fresh sandboxes (runs the leaf workspace; published by github, runner).
  // eval: one SWE-bench instance in its own image (the CLI's eval and a runner's eval round run it alike).
  { verify: ['src/verify/'], eval: ['src/eval/'] },
  // runs: storing and rendering trajectories for the run pages (reads the leaf format; used by app, runner, cli).
  { github: ['src/github/'], runs: ['src/runs/'] },
  { app: ['src/app/'], runner: ['src/runner/', 'runner/'], cli: ['src/cli/', 'bin/'] },
];

const pathsOf = (units) => Object.values(units).flat();
const anyOf = (paths) => `^(${paths.map((p) => p.replace(/[.]/g, '\\.')).join('|')})`;

/** For each unit: nothing from its own layer (but itself) or any layer above. */
const layerRules = LAYERS.flatMap((layer, index) =>
  Object.entries(layer).map(([unit, paths]) => {
    const peers = Object.entries(layer)
      .filter(([other]) => other !== unit)
      .flatMap(([, p]) => p);
    const above = LAYERS.slice(index + 1).flatMap(pathsOf);
    return { unit, paths, banned: [...peers, ...above] };
  }),
)
  .filter((r) => r.banned.length > 0)
  .map((r) => ({
    name: `layer-${r.unit}`,
    severity: 'error',
    comment: `${r.unit} may import only lower layers (see .dependency-cruiser.cjs LAYERS and docs/architecture.md)`,
    from: { path: anyOf(r.paths) },
    to: { path: anyOf(r.banned) },
  }));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import circle: break it by moving the shared part down a layer',
      from: {},
      to: { circular: true },
    },
    {
      name: 'product-imports-no-test-code',
      severity: 'error',
      comment: 'tests, benchmarks and scripts are not part of the product: the build does not compile them',
      from: { path: anyOf(pathsOf(Object.assign({}, ...LAYERS))) },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'every-module-in-a-layer',
      severity: 'error',
      comment: 'a source folder that no layer names is unchecked: add it to LAYERS (and docs/architecture.md)',
      from: { path: '^(src|runner|bin)/', pathNot: anyOf(pathsOf(Object.assign({}, ...LAYERS))) },
      to: {},
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
