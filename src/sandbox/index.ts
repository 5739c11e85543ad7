/**
 * Sandbox selection: `createSandbox(cfg, workspaceDir)` returns the configured implementation; `auto` picks docker
 * when the engine and image are there, else bwrap, and never falls back to the unisolated local sandbox.
 */
import { BwrapSandbox } from './bwrap.js';
import { resolveSandboxConfig } from './check.js';
import type { SandboxConfigInput } from './config.js';
import { DockerSandbox } from './docker/index.js';
import { LocalSandbox } from './local.js';
import type { Sandbox } from './types.js';

export {
  SandboxConfigSchema,
  DockerSandboxConfigSchema,
  BwrapSandboxConfigSchema,
  LocalSandboxConfigSchema,
  AutoSandboxConfigSchema,
  DEFAULT_SANDBOX_IMAGE,
  sandboxConfigFromEnv,
  checkRunnerSandbox,
  UNSAFE_LOCAL_OPT_IN,
  autoCandidates,
  type SandboxConfig,
  type SandboxConfigInput,
  type DockerSandboxConfig,
  type BwrapSandboxConfig,
  type LocalSandboxConfig,
  type AutoSandboxConfig,
} from './config.js';
export {
  checkSandbox,
  checkDocker,
  checkBwrap,
  resolveSandboxConfig,
  type SandboxCheck,
  type SandboxCheckResult,
} from './check.js';
export { DockerSandbox, reapStaleSandboxes, SandboxUnavailableError, SANDBOX_LABEL } from './docker/index.js';
export { BwrapSandbox } from './bwrap.js';
export { LocalSandbox } from './local.js';
export { ESLINT_BUNDLE_INSIDE, hostScannersDir, SCANNERS_DIR_INSIDE } from './scanners.js';
export { CLEAN_PATH } from './shellCommand.js';
export { SandboxLimitError, type Sandbox, type SandboxKind, type ExecOptions, type ExecResult } from './types.js';

export async function createSandbox(cfg: SandboxConfigInput, workspaceDir: string): Promise<Sandbox> {
  const resolved = await resolveSandboxConfig(cfg);
  switch (resolved.kind) {
    case 'docker':
      return DockerSandbox.create(workspaceDir, resolved);
    case 'bwrap':
      return BwrapSandbox.create(workspaceDir, resolved);
    case 'local':
      return new LocalSandbox(workspaceDir, resolved.defaultTimeoutMs);
  }
}
