import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type Docker from 'dockerode';
import type { DockerSandboxConfig } from '../config.js';
import { EGRESS_DIR_INSIDE } from '../egress/index.js';
import { baseEnv } from '../local.js';
import type { WorkspaceOwner } from '../ownership.js';
import { initProgram } from './programs.js';

/** Labels on every sandbox container, so the reaper can find the ones a crashed runner left behind. */
export const SANDBOX_LABEL = 'dev.frognano.sandbox';
export const LABEL_HOST = 'dev.frognano.host';
export const LABEL_PID = 'dev.frognano.pid';
export const LABEL_INSTANCE = 'dev.frognano.instance';
export const LABEL_CREATED = 'dev.frognano.created-ms';
export const LABEL_WORKSPACE = 'dev.frognano.workspace';
/** uid:gid the workspace had before it was chowned to the sandbox user; the reaper gives it back. */
export const LABEL_WORKSPACE_OWNER = 'dev.frognano.workspace-owner';
/** Distinguishes this runner process from an earlier one that had the same pid (restarted container). */
export const INSTANCE_ID = randomUUID();

/** The default workdir (DockerSandboxConfig.workdir): where the workspace is mounted and commands start. */
export const CONTAINER_WORKDIR = '/workspace';
export const CONTAINER_HOME = '/home/agent';

/**
 * The container every command runs in (and, with `egressDir`, the short-lived one a setup command with network runs
 * in): the workspace bind-mounted read-write at the workdir (/workspace unless configured) and nothing else writable but tmpfs /tmp and HOME; no
 * network interface but loopback, no capabilities for commands, no privilege gain, memory/CPU/pids limits, no host
 * environment. `egressDir`: the host directory of the egress proxy's socket, mounted read-only at
 * EGRESS_DIR_INSIDE (the container's only way out, see egress/session.ts).
 */
export function containerOptions(
  cfg: DockerSandboxConfig,
  hostDir: string,
  owner: WorkspaceOwner,
  egressDir?: string,
): Docker.ContainerCreateOptions {
  return {
    Image: cfg.image,
    Entrypoint: [],
    // PID 1 (init.py), as root like the exec wrapper and the sweep: the sandbox user cannot signal it.
    Cmd: ['python3', '-c', initProgram(), String(Math.ceil(cfg.jobTimeoutMs / 1000))],
    User: '0:0',
    WorkingDir: cfg.workdir,
    // The complete environment: nothing of the runner's (tokens, keys) reaches the container.
    Env: Object.entries(baseEnv(CONTAINER_HOME)).map(([k, v]) => `${k}=${v}`),
    Hostname: 'sandbox',
    NetworkDisabled: true,
    Labels: {
      ...cfg.labels,
      [SANDBOX_LABEL]: '1',
      [LABEL_HOST]: os.hostname(),
      [LABEL_PID]: String(process.pid),
      [LABEL_INSTANCE]: INSTANCE_ID,
      [LABEL_CREATED]: String(Date.now()),
      [LABEL_WORKSPACE]: hostDir,
      ...(owner.original ? { [LABEL_WORKSPACE_OWNER]: `${owner.original.uid}:${owner.original.gid}` } : {}),
    },
    StopTimeout: 1,
    HostConfig: hostConfig(cfg, hostDir, owner, egressDir),
  };
}

function hostConfig(
  cfg: DockerSandboxConfig,
  hostDir: string,
  owner: WorkspaceOwner,
  egressDir: string | undefined,
): Docker.HostConfig {
  const mb = 1024 * 1024;
  return {
    // Never a bridge, even with network: its gateway is the runner host (services on 0.0.0.0, the private ranges,
    // cloud metadata behind it). A setup command's network is the egress socket alone.
    NetworkMode: 'none',
    // A Mount, not a "src:dst" Bind string, so a path with ':' or ',' cannot change its meaning.
    Mounts: [
      { Type: 'bind', Source: hostDir, Target: cfg.workdir, ReadOnly: false },
      ...(egressDir ? [{ Type: 'bind' as const, Source: egressDir, Target: EGRESS_DIR_INSIDE, ReadOnly: true }] : []),
    ],
    ReadonlyRootfs: true,
    Tmpfs: {
      '/tmp': `rw,nosuid,nodev,size=${cfg.tmpSizeMb}m,mode=1777`,
      [CONTAINER_HOME]: `rw,nosuid,nodev,size=${cfg.tmpSizeMb}m,uid=${owner.uid},gid=${owner.gid},mode=0700`,
    },
    // Only what the root exec wrapper and the workspace measurement need (kill the sandbox user's processes,
    // switch to its uid, walk every directory). Commands run as the sandbox user hold none of them, and
    // no-new-privileges keeps them from gaining any.
    CapDrop: ['ALL'],
    CapAdd: ['KILL', 'SETUID', 'SETGID', 'DAC_READ_SEARCH'],
    SecurityOpt: ['no-new-privileges'],
    Memory: cfg.memoryMb * mb,
    MemorySwap: cfg.memoryMb * mb, // equal to Memory: no swap
    NanoCpus: Math.round(cfg.cpus * 1e9),
    PidsLimit: cfg.pidsLimit,
    Ulimits: [
      { Name: 'fsize', Soft: cfg.fileSizeMb * mb, Hard: cfg.fileSizeMb * mb },
      { Name: 'nofile', Soft: 4096, Hard: 4096 },
    ],
    IpcMode: 'private',
    AutoRemove: true,
  };
}
