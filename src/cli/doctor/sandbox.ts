import { checkBwrap, checkDocker, checkSandbox, sandboxConfigFromEnv, type SandboxCheckResult } from '../../sandbox/index.js';
import { check, type CheckResult } from './check.js';

const LABEL: Record<SandboxCheckResult['kind'], string> = {
  docker: 'Docker sandbox',
  bwrap: 'bwrap sandbox',
  local: 'local sandbox',
};

/**
 * The sandbox checks of D's check.ts, one line per kind. With a kind chosen (--sandbox or FROGNANO_SANDBOX)
 * only that one is checked and it is required. Otherwise docker and bwrap are both checked: at least one
 * must work (auto uses docker first), and a missing second one is only a warning.
 */
export async function checkSandboxes(kind: string | undefined, env: NodeJS.ProcessEnv): Promise<CheckResult[]> {
  let chosen = kind ?? env.FROGNANO_SANDBOX?.trim().toLowerCase();
  if (chosen === 'auto' || chosen === '') chosen = undefined;
  const configFor = (k: string) => sandboxConfigFromEnv({ ...env, FROGNANO_SANDBOX: k });
  let cfgError: string | undefined;
  try {
    configFor(chosen ?? 'auto');
  } catch (err) {
    cfgError = (err as Error).message;
  }
  if (cfgError) return [check.fail('Sandbox', cfgError, 'fix the FROGNANO_SANDBOX* environment variables (see README)')];

  if (chosen) {
    const result = await checkSandbox(configFor(chosen));
    return result.checks.map((r) => toLine(r, true, r.kind === 'local'));
  }
  const cfg = configFor('auto');
  if (cfg.kind !== 'auto') throw new Error('unreachable: auto config expected');
  const [docker, bwrap] = await Promise.all([
    checkDocker(sandboxConfigFromEnv({ ...env, FROGNANO_SANDBOX: 'docker' }) as Parameters<typeof checkDocker>[0]),
    checkBwrap(sandboxConfigFromEnv({ ...env, FROGNANO_SANDBOX: 'bwrap' }) as Parameters<typeof checkBwrap>[0]),
  ]);
  const anyOk = docker.ok || bwrap.ok;
  return [toLine(docker, !anyOk, false), toLine(bwrap, !anyOk, false)];
}

function toLine(r: SandboxCheckResult, required: boolean, warnEvenIfOk: boolean): CheckResult {
  const name = LABEL[r.kind];
  if (r.ok && warnEvenIfOk) return check.warn(name, r.message, r.hint ?? '');
  if (r.ok) return check.ok(name, r.message, required);
  if (!required) return check.warn(name, r.message, r.hint ?? 'not needed while the other sandbox works');
  return check.fail(name, r.message, r.hint ?? 'see the message');
}
