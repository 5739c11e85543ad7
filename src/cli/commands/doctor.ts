import { assertSandboxKind, parseCommandArgs } from '../args.js';
import { formatCheck, guarded, type CheckResult } from '../doctor/check.js';
import { checkGitHubApp } from '../doctor/githubApp.js';
import { checkModel } from '../doctor/model.js';
import { checkSandboxes } from '../doctor/sandbox.js';
import { checkScanners } from '../doctor/scanners.js';
import { checkNode, checkRedisAndRunners } from '../doctor/system.js';
import { CliError, EXIT, UsageError } from '../exitCodes.js';
import { DOCTOR_HELP } from '../help.js';
import { writeLine, type CliIo } from '../io.js';
import { backendConfigFromFlags } from '../modelConfig.js';
import type { BackendConfig } from '../../inference/index.js';

const OPTIONS = {
  sandbox: { type: 'string' },
  'model-dir': { type: 'string' },
  endpoint: { type: 'string' },
  model: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * A bare `--model` (last, or before another option) is the focused form: it becomes `--model=` so parseArgs keeps
 * `--model NAME` (the served model of --endpoint) for the same option. doctor takes no positional arguments, so a
 * word after --model is always its NAME.
 */
function bareModelFlag(args: string[]): string[] {
  return args.map((a, i) =>
    a === '--model' && (i === args.length - 1 || args[i + 1]!.startsWith('-')) ? '--model=' : a,
  );
}

/** `frognano doctor`: one line per check; exit 1 when a required one fails. `--model`: the model check alone. */
export async function doctorCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('doctor', bareModelFlag(args), OPTIONS);
  if (values.help) {
    io.stdout.write(DOCTOR_HELP);
    return EXIT.OK;
  }
  if (positionals.length > 0) {
    throw new UsageError(`doctor takes no arguments, got '${positionals[0]}'.`, 'doctor');
  }

  assertSandboxKind(values.sandbox, 'doctor');
  const modelOnly = values.model !== undefined;
  // Usage mistakes (two models at once) still exit 2; a broken model environment becomes a failed line.
  let modelCfg: BackendConfig | undefined;
  let modelError: string | undefined;
  try {
    modelCfg = backendConfigFromFlags({ ...values, model: values.model || undefined }, io.env, io.cwd, 'doctor');
  } catch (err) {
    if (err instanceof UsageError || !(err instanceof CliError)) throw err;
    modelError = err.message;
  }
  const checks = modelOnly
    ? [await guarded('Model', true, () => checkModel(modelCfg, modelError, { required: true }))]
    : await allChecks(values.sandbox, modelCfg, modelError, io);
  return report(checks, values.json === true, io);
}

/** Every check; independent ones run concurrently, so a slow Docker daemon does not add to a Redis timeout. */
async function allChecks(
  sandbox: string | undefined,
  modelCfg: BackendConfig | undefined,
  modelError: string | undefined,
  io: CliIo,
): Promise<CheckResult[]> {
  const unexpected = (name: string) => (err: Error) => [
    { name, status: 'fail' as const, detail: err.message, hint: 'unexpected error while checking', required: true },
  ];
  const [node, redis, sandboxes, scanners, model, app] = await Promise.all([
    guarded('Node.js', true, () => checkNode()),
    checkRedisAndRunners(io.env).catch(unexpected('Redis')),
    checkSandboxes(sandbox, io.env).catch(unexpected('Sandbox')),
    guarded('Scanners', false, () => checkScanners()),
    guarded('Model', true, () => checkModel(modelCfg, modelError)),
    guarded('GitHub App', true, () => checkGitHubApp(io.env, io.cwd)),
  ]);
  return [node, ...redis, ...sandboxes, scanners, model, app];
}

/** One line per check (or JSON) and the summary; the exit code. */
function report(checks: CheckResult[], json: boolean, io: CliIo): number {
  const failed = checks.filter((c) => c.status === 'fail' && c.required);
  const code = failed.length > 0 ? EXIT.CHECKS_FAILED : EXIT.OK;
  if (json) {
    writeLine(io.stdout, JSON.stringify({ ok: failed.length === 0, checks }, null, 2));
    return code;
  }
  const width = Math.max(...checks.map((c) => c.name.length));
  for (const c of checks) writeLine(io.stdout, formatCheck(c, width));
  const warnings = checks.filter((c) => c.status === 'warn' || (c.status === 'fail' && !c.required)).length;
  writeLine(io.stdout);
  writeLine(
    io.stdout,
    failed.length > 0
      ? `${failed.length} required check${failed.length === 1 ? '' : 's'} failed: ${failed.map((c) => c.name).join(', ')}.`
      : `All required checks passed${warnings ? ` (${warnings} warning${warnings === 1 ? '' : 's'})` : ''}.`,
  );
  return code;
}
