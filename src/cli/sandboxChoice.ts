import { checkSandbox, resolveSandboxConfig, sandboxConfigFromEnv, type SandboxConfig } from '../sandbox/index.js';
import { sandboxIdentity } from '../sandbox/identity.js';
import { setupError } from './exitCodes.js';

export type ConcreteSandboxConfig = Awaited<ReturnType<typeof resolveSandboxConfig>>;

/**
 * The sandbox config to create, checked to work here before anything runs (solve: before the model is loaded):
 * `auto` is resolved once (docker, else bwrap) so every sandbox of the run is the same kind; an explicit kind is
 * checked as is.
 */
export async function usableSandbox(kind: string | undefined, env: NodeJS.ProcessEnv): Promise<ConcreteSandboxConfig> {
  let cfg: SandboxConfig;
  try {
    cfg = sandboxConfigFromEnv(kind ? { ...env, FROGNANO_SANDBOX: kind } : env);
  } catch (err) {
    throw setupError((err as Error).message, 'fix the FROGNANO_SANDBOX* environment variables');
  }
  if (cfg.kind === 'auto') {
    try {
      return await resolveSandboxConfig(cfg);
    } catch (err) {
      throw setupError(
        `no sandbox available: ${(err as Error).message}`,
        'run `frognano doctor` for details, or choose one with --sandbox',
      );
    }
  }
  const check = await checkSandbox(cfg);
  if (!check.ok) {
    const failed = check.checks.find((c) => !c.ok) ?? check.checks[0];
    throw setupError(
      `the ${cfg.kind} sandbox is not usable: ${failed?.message ?? 'unknown reason'}`,
      failed?.hint ?? 'run `frognano doctor` for details',
    );
  }
  return cfg;
}

/**
 * The sandbox in base-result cache keys (VerifyOptions.environmentKey): the image's ID on docker, the host's identity
 * otherwise (src/sandbox/identity.ts).
 */
export function environmentKey(cfg: ConcreteSandboxConfig): Promise<string> {
  return sandboxIdentity(cfg);
}
