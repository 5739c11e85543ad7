import {
  autoCandidates,
  checkBwrap,
  checkDocker,
  checkSandbox,
  sandboxConfigFromEnv,
  type SandboxCheckResult,
  type SandboxConfig,
} from '../../sandbox/index.js';
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
  let cfg: SandboxConfig;
  try {
    cfg = sandboxConfigFromEnv({ ...env, FROGNANO_SANDBOX: kind ?? env.FROGNANO_SANDBOX });
  } catch (err) {
    return [
      check.fail('Sandbox', (err as Error).message, 'fix the FROGNANO_SANDBOX* environment variables (see README)'),
    ];
  }

  if (cfg.kind !== 'auto') {
    const result = await checkSandbox(cfg);
    return result.checks.map((r) => toLine(r, true, r.kind === 'local'));
  }
  const candidates = autoCandidates(cfg);
  // The docker smoke test runs a real sandbox: it also tells which setup-network mode each sandbox offers here.
  const [docker, bwrap] = await Promise.all([
    checkDocker(candidates.docker, { smokeTest: true }),
    checkBwrap(candidates.bwrap),
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
