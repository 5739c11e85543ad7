import { z } from 'zod';

/** Default image name; build it with runner/sandbox.Dockerfile (or scripts/build-sandbox-image.sh offline). */
export const DEFAULT_SANDBOX_IMAGE = 'frognano-sandbox:latest';

const uidGid = z
  .string()
  .regex(/^[1-9]\d*:[1-9]\d*$/, 'user must be "UID:GID" with both non-zero (the sandbox never runs as root)');

/** Limits shared by the isolating sandboxes. Every one has a finite default: nothing a model runs is unbounded. */
const limits = {
  /**
   * Memory the job's commands may use together, tmpfs included (docker: the container's cgroup; bwrap: the job's
   * cgroup; no swap either way).
   */
  memoryMb: z.number().int().min(64).default(4096),
  /** Processes/threads at once (docker: pids cgroup; bwrap: the job's pids cgroup and RLIMIT_NPROC). */
  pidsLimit: z.number().int().min(8).default(512),
  /** Largest file a command may write. */
  fileSizeMb: z.number().int().min(1).default(1024),
  /**
   * Size of each tmpfs (/tmp, HOME; docker: size=; bwrap: --size where bwrap has it (0.10+), else bounded by the
   * job's memory cgroup, which tmpfs pages are charged to).
   */
  tmpSizeMb: z.number().int().min(1).default(1024),
  /**
   * Workspace disk budget: what the job's files may occupy in the workspace (repository included), and how many
   * files and directories they may be. Measured inside the sandbox (budget.ts); past it the job stops with a
   * SandboxLimitError.
   */
  workspaceMb: z.number().int().min(1).default(4096),
  workspaceFiles: z.number().int().min(10).default(1_000_000),
  /** How often the workspace is measured while a command runs. */
  workspaceCheckMs: z.number().int().min(100).default(2000),
  /** Timeout of one command when the caller gives none. */
  defaultTimeoutMs: z.number().int().positive().default(120_000),
  /** Whole-sandbox lifetime: after this every process is killed and further commands fail. */
  jobTimeoutMs: z
    .number()
    .int()
    .positive()
    .default(2 * 60 * 60 * 1000),
  /** Cap on captured bytes per stream when the caller gives none. */
  maxOutputBytes: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /** uid:gid commands run as when the runner itself is root (a non-root runner maps its own uid). */
  user: uidGid.default('1000:1000'),
};

/** Directories a docker workdir may not be: the system's, and the ones the sandbox mounts itself. */
const RESERVED_WORKDIRS = new Set(
  [
    'bin',
    'boot',
    'dev',
    'etc',
    'home',
    'lib',
    'lib32',
    'lib64',
    'libx32',
    'opt',
    'proc',
    'root',
    'run',
    'sbin',
    'srv',
    'sys',
    'tmp',
    'usr',
    'var',
  ].map((d) => `/${d}`),
);

export const DockerSandboxConfigSchema = z.object({
  kind: z.literal('docker'),
  image: z.string().min(1).default(DEFAULT_SANDBOX_IMAGE),
  cpus: z.number().positive().max(256).default(2),
  /** Docker engine socket; unset: dockerode's default (DOCKER_HOST or /var/run/docker.sock). */
  socketPath: z.string().optional(),
  /** Extra labels on the container (e.g. the job id), besides the ones every frognano sandbox gets. */
  labels: z.record(z.string(), z.string()).default({}),
  /**
   * Where the workspace is mounted and commands start: /workspace, or a benchmark image's own repository path
   * (SWE-bench's /testbed, whose environment was installed against that path; `frognano eval`). One directory
   * right below the root, never one the sandbox itself uses (/tmp, HOME) or the system's.
   */
  workdir: z
    .string()
    .regex(/^\/[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/, 'workdir must be one directory right below /, like /testbed')
    .refine((w) => !RESERVED_WORKDIRS.has(w), 'workdir must not be a system directory or one the sandbox uses')
    .default('/workspace'),
  ...limits,
});

export const BwrapSandboxConfigSchema = z.object({
  kind: z.literal('bwrap'),
  /** Path of the bwrap binary. */
  bwrapPath: z.string().default('bwrap'),
  /** Open files per process. */
  nofile: z.number().int().min(64).default(4096),
  /**
   * `required`: every command of a job runs in one cgroup that caps the job's total memory (tmpfs included) and
   * processes, and the sandbox refuses to start where it cannot make one. `off`: the documented fallback for hosts
   * without a writable cgroup: per-process limits only (address space, RLIMIT_NPROC).
   */
  cgroup: z.enum(['required', 'off']).default('required'),
  /** Directory below /sys/fs/cgroup[/memory|/pids] for the job cgroups; default: the runner's own cgroup. */
  cgroupParent: z.string().optional(),
  ...limits,
});

export const LocalSandboxConfigSchema = z.object({
  kind: z.literal('local'),
  defaultTimeoutMs: z.number().int().positive().default(120_000),
});

/** `auto`: docker when the engine and image are there, else bwrap; never the unisolated local sandbox. */
export const AutoSandboxConfigSchema = z.object({
  kind: z.literal('auto'),
  docker: DockerSandboxConfigSchema.omit({ kind: true }).partial().default({}),
  bwrap: BwrapSandboxConfigSchema.omit({ kind: true }).partial().default({}),
});

export const SandboxConfigSchema = z.discriminatedUnion('kind', [
  DockerSandboxConfigSchema,
  BwrapSandboxConfigSchema,
  LocalSandboxConfigSchema,
  AutoSandboxConfigSchema,
]);

export type DockerSandboxConfig = z.infer<typeof DockerSandboxConfigSchema>;
export type BwrapSandboxConfig = z.infer<typeof BwrapSandboxConfigSchema>;
export type LocalSandboxConfig = z.infer<typeof LocalSandboxConfigSchema>;
export type AutoSandboxConfig = z.infer<typeof AutoSandboxConfigSchema>;
export type SandboxConfig = z.infer<typeof SandboxConfigSchema>;
export type SandboxConfigInput = z.input<typeof SandboxConfigSchema>;

/** The docker and the bwrap config an `auto` config tries, every default filled in. */
export function autoCandidates(cfg: AutoSandboxConfig): { docker: DockerSandboxConfig; bwrap: BwrapSandboxConfig } {
  return {
    docker: DockerSandboxConfigSchema.parse({ ...cfg.docker, kind: 'docker' }),
    bwrap: BwrapSandboxConfigSchema.parse({ ...cfg.bwrap, kind: 'bwrap' }),
  };
}

/**
 * Reads the sandbox configuration from the environment:
 * FROGNANO_SANDBOX=docker|bwrap|local|auto (default auto), FROGNANO_SANDBOX_IMAGE, FROGNANO_SANDBOX_MEMORY_MB,
 * FROGNANO_SANDBOX_CPUS, FROGNANO_SANDBOX_PIDS, FROGNANO_SANDBOX_FILE_SIZE_MB, FROGNANO_SANDBOX_TMP_MB,
 * FROGNANO_SANDBOX_WORKSPACE_MB, FROGNANO_SANDBOX_WORKSPACE_FILES,
 * FROGNANO_SANDBOX_TIMEOUT_MS (per command), FROGNANO_SANDBOX_JOB_TIMEOUT_MS, FROGNANO_SANDBOX_USER (uid:gid),
 * FROGNANO_SANDBOX_BWRAP (binary path), FROGNANO_SANDBOX_BWRAP_CGROUP (required|off),
 * FROGNANO_SANDBOX_CGROUP_PARENT. Invalid values throw with the variable's name in the message.
 */
export function sandboxConfigFromEnv(env: NodeJS.ProcessEnv = process.env): SandboxConfig {
  const kind = (env.FROGNANO_SANDBOX ?? 'auto').trim().toLowerCase() || 'auto';
  const num = (name: string): number | undefined => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return undefined;
    const n = Number(raw);
    if (!Number.isFinite(n)) throw new Error(`${name}=${raw} is not a number`);
    return n;
  };
  const str = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    return raw ? raw : undefined;
  };
  const common = {
    memoryMb: num('FROGNANO_SANDBOX_MEMORY_MB'),
    pidsLimit: num('FROGNANO_SANDBOX_PIDS'),
    fileSizeMb: num('FROGNANO_SANDBOX_FILE_SIZE_MB'),
    tmpSizeMb: num('FROGNANO_SANDBOX_TMP_MB'),
    workspaceMb: num('FROGNANO_SANDBOX_WORKSPACE_MB'),
    workspaceFiles: num('FROGNANO_SANDBOX_WORKSPACE_FILES'),
    defaultTimeoutMs: num('FROGNANO_SANDBOX_TIMEOUT_MS'),
    jobTimeoutMs: num('FROGNANO_SANDBOX_JOB_TIMEOUT_MS'),
    user: str('FROGNANO_SANDBOX_USER'),
  };
  const docker = { ...common, image: str('FROGNANO_SANDBOX_IMAGE'), cpus: num('FROGNANO_SANDBOX_CPUS') };
  const bwrap = {
    ...common,
    bwrapPath: str('FROGNANO_SANDBOX_BWRAP'),
    cgroup: str('FROGNANO_SANDBOX_BWRAP_CGROUP'),
    cgroupParent: str('FROGNANO_SANDBOX_CGROUP_PARENT'),
  };
  const drop = <T extends object>(o: T): Partial<T> =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
  let input: unknown;
  switch (kind) {
    case 'docker':
      input = { kind, ...drop(docker) };
      break;
    case 'bwrap':
      input = { kind, ...drop(bwrap) };
      break;
    case 'local':
      input = { kind, ...drop({ defaultTimeoutMs: common.defaultTimeoutMs }) };
      break;
    case 'auto':
      input = { kind, docker: drop(docker), bwrap: drop(bwrap) };
      break;
    default:
      throw new Error(`FROGNANO_SANDBOX=${kind} is not one of docker, bwrap, local, auto`);
  }
  const parsed = SandboxConfigSchema.safeParse(input);
  if (!parsed.success) {
    const msg = parsed.error.issues.map((i) => `${i.path.join('.') || 'config'}: ${i.message}`).join('; ');
    throw new Error(`invalid sandbox configuration from environment: ${msg}`);
  }
  return parsed.data;
}

/** What commands and writes fail with once a sandbox's jobTimeoutMs has passed (docker and bwrap). */
export function jobTimeLimitError(jobTimeoutMs: number): Error {
  return new Error(`sandbox stopped: the job time limit of ${Math.round(jobTimeoutMs / 1000)}s was reached`);
}

/** Parses "UID:GID". */
export function parseUser(user: string): { uid: number; gid: number } {
  const [uid, gid] = user.split(':').map(Number);
  return { uid, gid };
}

/** The opt-in a runner needs before it runs jobs in the unisolated `local` sandbox. */
export const UNSAFE_LOCAL_OPT_IN = 'FROGNANO_ALLOW_UNSAFE_LOCAL_SANDBOX';

/**
 * A runner executes commands chosen by a model that reads untrusted issues: it refuses the `local` sandbox (no
 * isolation at all) unless FROGNANO_ALLOW_UNSAFE_LOCAL_SANDBOX=1 says the operator means it. Returns a warning to
 * log when it is allowed.
 */
export function checkRunnerSandbox(cfg: SandboxConfig, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (cfg.kind !== 'local') return undefined;
  if (env[UNSAFE_LOCAL_OPT_IN] !== '1') {
    throw new Error(
      "FROGNANO_SANDBOX=local runs the model's commands on the runner with no isolation: a prompt-injected issue could " +
        "read the runner's files and credentials. Use docker or bwrap; for a development runner on a machine you can " +
        `lose, set ${UNSAFE_LOCAL_OPT_IN}=1`,
    );
  }
  return `UNSAFE: ${UNSAFE_LOCAL_OPT_IN}=1: jobs run in the local sandbox, with no isolation from this machine`;
}
