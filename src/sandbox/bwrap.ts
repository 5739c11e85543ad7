import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MEASURE_SCRIPT, parseUsage, type WorkspaceUsage } from './budget.js';
import { createJobCgroup, joinCgroupArgv, type JobCgroup } from './cgroup.js';
import { BwrapSandboxConfigSchema, parseUser, type BwrapSandboxConfig } from './config.js';
import { JobWorkspace, resolveWorkspaceDir } from './jobWorkspace.js';
import { baseEnv } from './local.js';
import type { WorkspaceOwner } from './ownership.js';
import { appendNote, runProcess } from './process.js';
import type { ExecOptions, ExecResult, Sandbox } from './types.js';
import { shellCommand } from './shellCommand.js';
import { hostScannersDir, SCANNERS_DIR_INSIDE } from './scanners.js';
import { egressGrant, EGRESS_DIR_INSIDE, forwardedArgv, proxyEnv, runWithEgress } from './egress/index.js';

export const BWRAP_WORKDIR = '/workspace';
const BWRAP_HOME = '/home/agent';

/**
 * What of the host's /etc commands may see. Binding all of /etc would show shadow files, ssh host keys, docker and
 * cloud credentials; these are only what dynamic linking, TLS roots, locale/time and shells need.
 */
const ETC_ALLOW = [
  'alternatives',
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'debian_version',
  'environment.d',
  'gitattributes',
  'host.conf',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'locale.alias',
  'localtime',
  'mime.types',
  'nsswitch.conf',
  'os-release',
  'profile',
  'profile.d',
  'protocols',
  'pki',
  'services',
  'ssl',
  'timezone',
  'xdg',
];

const GITCONFIG = `[safe]
\tdirectory = *
[user]
\tname = FrogNano
\temail = frognano@users.noreply.github.com
[init]
\tdefaultBranch = main
`;

/** Top-level directories with the host's programs and libraries, bound read-only (symlinks recreated as such). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

function systemBinds(): string[] {
  const args: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    let st;
    try {
      st = lstatSync(dir);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  for (const name of ETC_ALLOW) {
    const p = `/etc/${name}`;
    if (existsSync(p)) args.push('--ro-bind', p, p);
  }
  // Python's per-version config directories (/etc/python3.11 ...) are read at start-up.
  for (const name of readdirSync('/etc')) {
    if (/^python3(\.\d+)?$/.test(name)) args.push('--ro-bind', `/etc/${name}`, `/etc/${name}`);
  }
  return args;
}

/**
 * The host's scanner bundles, read-only at the path the sandbox image has them, when the user bwrap runs as can walk
 * down to them: a checkout under /root, say, is not reachable by the sandbox uid a root runner starts bwrap as, and
 * an unreachable bind would fail every sandbox. Without it the scan reports the bundle as not installed.
 */
function scannerBinds(user: { uid: number; gid: number }): string[] {
  const dir = hostScannersDir();
  return dir && searchableBy(dir, user) ? ['--ro-bind', dir, SCANNERS_DIR_INSIDE] : [];
}

/** Whether `user` may walk down to `dir` (every directory on the way searchable by it), as bwrap under a root runner must. */
export function searchableBy(dir: string, user: { uid: number; gid: number }): boolean {
  if ((process.getuid?.() ?? 0) !== 0) return true; // bwrap runs as this process, which found the directory
  for (let d = dir; ; d = path.dirname(d)) {
    let st;
    try {
      st = statSync(d);
    } catch {
      return false;
    }
    const bits = st.uid === user.uid ? st.mode & 0o100 : st.gid === user.gid ? st.mode & 0o010 : st.mode & 0o001;
    if (!bits) return false;
    if (d === path.dirname(d)) return true;
  }
}

const sizeSupport = new Map<string, boolean>();
/** Whether this bwrap has --size for tmpfs mounts (bubblewrap 0.10+). */
function bwrapHasSize(bwrapPath: string): boolean {
  let known = sizeSupport.get(bwrapPath);
  if (known === undefined) {
    try {
      known = execFileSync(bwrapPath, ['--help'], {
        encoding: 'utf8',
        timeout: 5000,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).includes('--size');
    } catch {
      known = false;
    }
    sizeSupport.set(bwrapPath, known);
  }
  return known;
}

/**
 * A root runner starts bwrap as the sandbox uid, which must be able to walk down to the workspace: say so plainly
 * instead of letting bwrap fail with "Can't find source path".
 */
async function assertReachable(dir: string, user: { uid: number; gid: number }): Promise<void> {
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    const st = await fs.stat(d);
    const searchable = st.uid === user.uid ? st.mode & 0o100 : st.gid === user.gid ? st.mode & 0o010 : st.mode & 0o001;
    if (!searchable) {
      throw new Error(
        `the sandbox user ${user.uid} cannot reach the workspace ${dir}: ${d} is not searchable by it ` +
          `(mode ${(st.mode & 0o777).toString(8)}); keep workspaces under a directory others can enter, such as /tmp`,
      );
    }
    if (d === path.dirname(d)) return;
  }
}

/**
 * The passwd, group and gitconfig files commands see (a directory of their own, removed on close). Only the sandbox
 * user is named, so `id`, git and python find a user without seeing the host's accounts.
 */
async function writeStateDir(owner: WorkspaceOwner): Promise<string> {
  const stateDir = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-bwrap-'));
  try {
    await fs.writeFile(
      path.join(stateDir, 'passwd'),
      `root:x:0:0:root:/root:/usr/sbin/nologin\nagent:x:${owner.uid}:${owner.gid}:FrogNano sandbox:${BWRAP_HOME}:/bin/bash\n` +
        `nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    );
    await fs.writeFile(path.join(stateDir, 'group'), `root:x:0:\nagent:x:${owner.gid}:\nnogroup:x:65534:\n`);
    // Same git defaults as the docker image (runner/sandbox.Dockerfile), instead of the host's /etc/gitconfig.
    await fs.writeFile(path.join(stateDir, 'gitconfig'), GITCONFIG);
    await fs.chmod(stateDir, 0o755);
    return stateDir;
  } catch (err) {
    await fs.rm(stateDir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * bubblewrap sandbox for hosts without a Docker engine: every namespace unshared (network: only `lo`), the host's
 * /usr and a few /etc files read-only, tmpfs /tmp and HOME, the workspace as the only writable bind (at /workspace),
 * an empty environment, all capabilities dropped, one cgroup per job for total memory (tmpfs included) and
 * processes (see cgroup.ts), and rlimits for processes, file size and open files. Each exec is a fresh bwrap with
 * its own PID namespace: when the command ends, bwrap's init exits and the kernel kills every process left in the
 * namespace (setsid daemons included); a timeout kills bwrap's process group, with the same effect.
 * A root runner starts bwrap as the sandbox uid (setpriv) so that the process limit applies: the kernel never
 * enforces RLIMIT_NPROC for real uid 0, even inside a user namespace.
 */
export class BwrapSandbox implements Sandbox {
  readonly kind = 'bwrap' as const;
  readonly workdir = BWRAP_WORKDIR;
  private readonly running = new Map<AbortController, Promise<ExecResult>>();

  private constructor(
    private readonly cfg: BwrapSandboxConfig,
    private readonly job: JobWorkspace,
    /** Holds the generated passwd/group files. */
    private readonly stateDir: string,
    /** The job's cgroup; undefined only with cgroup: 'off'. */
    private readonly cgroup: JobCgroup | undefined,
  ) {
    job.measureWith(() => this.measureWorkspace());
  }

  /** Workspace directory on the host (real path). */
  get hostDir(): string {
    return this.job.hostDir;
  }

  private get owner(): WorkspaceOwner {
    return this.job.owner;
  }

  /**
   * The workspace's size and entries, measured by a bwrap of its own: the same view as commands, and a PID
   * namespace of its own, so no command can see or signal it.
   */
  private async measureWorkspace(): Promise<WorkspaceUsage> {
    const argv = this.argvFor(
      ['bash', '-c', MEASURE_SCRIPT, 'measure', BWRAP_WORKDIR],
      BWRAP_WORKDIR,
      baseEnv(BWRAP_HOME),
      {
        inJobCgroup: false,
      },
    );
    const r = await runProcess(argv, {
      cwd: '/',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      timeoutMs: 120_000,
      maxOutputBytes: 4096,
    });
    if (r.exitCode !== 0) throw new Error(r.timedOut ? 'no answer within 120s' : `exit ${r.exitCode}`);
    return parseUsage(r.stdout);
  }

  static async create(
    workspaceDir: string,
    config: Partial<Omit<BwrapSandboxConfig, 'kind'>> = {},
  ): Promise<BwrapSandbox> {
    const cfg = BwrapSandboxConfigSchema.parse({ ...config, kind: 'bwrap' });
    const hostDir = await resolveWorkspaceDir(workspaceDir);
    if ((process.getuid?.() ?? 0) === 0) await assertReachable(hostDir, parseUser(cfg.user));
    const cgroup =
      cfg.cgroup === 'required'
        ? await createJobCgroup({ memoryBytes: cfg.memoryMb * 1024 * 1024, pids: cfg.pidsLimit }, cfg.cgroupParent)
        : undefined;
    const job = await JobWorkspace.claim(hostDir, cfg).catch(async (err: unknown) => {
      await cgroup?.close();
      throw err;
    });
    let stateDir: string;
    try {
      stateDir = await writeStateDir(job.owner);
    } catch (err) {
      await job.release();
      await cgroup?.close();
      throw err;
    }
    return new BwrapSandbox(cfg, job, stateDir, cgroup);
  }

  /** The complete command line for one command (exported for checkSandbox and the tests' inspection). */
  argv(command: string, cwdInside: string, env: Record<string, string>): string[] {
    return this.argvFor(['bash', '-lc', command], cwdInside, env);
  }

  /** The complete command line that runs `inner` (argv) inside the sandbox. */
  argvFor(
    inner: string[],
    cwdInside: string,
    env: Record<string, string>,
    opts: { inJobCgroup?: boolean; egressDir?: string } = {},
  ): string[] {
    const prefix = this.privilegeDrop();
    const setenv = Object.entries(env).flatMap(([k, v]) => ['--setenv', k, v]);
    const limits = this.ulimitScript();
    const size = bwrapHasSize(this.cfg.bwrapPath) ? ['--size', String(this.cfg.tmpSizeMb * 1024 * 1024)] : [];
    const bwrapArgv = [
      ...prefix,
      this.cfg.bwrapPath,
      '--unshare-all',
      // A user namespace is required (not just tried), and commands may not create nested ones: less kernel
      // surface, and no way to gain namespace-root capabilities inside.
      '--unshare-user',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--uid',
      String(this.owner.uid),
      '--gid',
      String(this.owner.gid),
      '--hostname',
      'sandbox',
      ...this.filesystemArgs(size, opts.egressDir),
      '--chdir',
      cwdInside,
      '--clearenv',
      ...setenv,
      '--',
      'bash',
      '-c',
      limits,
      'frognano-sandbox',
      ...inner,
    ];
    // The workspace measurement stays out of the job's cgroup: a job at its memory or pids limit must not make it
    // fail (it is this code's own find and awk).
    return this.cgroup && opts.inJobCgroup !== false ? joinCgroupArgv(this.cgroup.procsFiles, bwrapArgv) : bwrapArgv;
  }

  /** A root runner starts bwrap as the sandbox user, with no capabilities to inherit or regain. */
  private privilegeDrop(): string[] {
    const isRoot = (process.getuid?.() ?? 0) === 0;
    return isRoot
      ? [
          'setpriv',
          `--reuid=${this.owner.uid}`,
          `--regid=${this.owner.gid}`,
          '--clear-groups',
          '--inh-caps=-all',
          '--bounding-set=-all',
        ]
      : [];
  }

  /** The shell that sets the per-process limits, then runs the command. */
  private ulimitScript(): string {
    // ulimit -S -H: a command may lower but never raise them. -v is in KiB, -f in 1024-byte blocks (bash). The
    // address-space limit is only the fallback without a cgroup: per process, and it breaks runtimes that reserve
    // large address ranges (node, go, java) where the cgroup counts what is really used.
    const addressSpace = this.cgroup ? '' : `-v ${this.cfg.memoryMb * 1024} `;
    return (
      `ulimit -S -H -u ${this.cfg.pidsLimit} ${addressSpace}-f ${this.cfg.fileSizeMb * 1024} ` +
      `-n ${this.cfg.nofile} -c 0 || exit 125; exec "$@"`
    );
  }

  /**
   * The sandbox's filesystem: read-only system directories, its own /etc files, tmpfs scratch, the workspace, and
   * for a setup command with network the egress proxy's socket directory (read-only; egress/session.ts).
   */
  private filesystemArgs(size: string[], egressDir?: string): string[] {
    return [
      ...systemBinds(),
      '--ro-bind',
      path.join(this.stateDir, 'passwd'),
      '/etc/passwd',
      '--ro-bind',
      path.join(this.stateDir, 'group'),
      '/etc/group',
      '--ro-bind',
      path.join(this.stateDir, 'gitconfig'),
      '/etc/gitconfig',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      ...size,
      '--tmpfs',
      '/tmp',
      ...size,
      '--tmpfs',
      '/var/tmp',
      ...size,
      '--tmpfs',
      BWRAP_HOME,
      '--bind',
      this.hostDir,
      BWRAP_WORKDIR,
      ...(egressDir ? ['--ro-bind', egressDir, EGRESS_DIR_INSIDE] : []),
      // The verification scanners' bundles, read-only at the path the sandbox image has them (sandbox/scanners.ts).
      ...scannerBinds(this.owner),
      // bwrap's own root is a writable tmpfs (where /etc etc. were created): make it read-only too.
      '--remount-ro',
      '/',
    ];
  }

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    // With network, the clean shell (env -i) must keep the proxy variables: they go in with the command's own.
    const env = options.network ? { ...options.env, ...proxyEnv() } : options.env;
    const shell = shellCommand(command, { ...options, env }, baseEnv(BWRAP_HOME));
    return this.spawn(shell.argv, shell.options);
  }

  /**
   * A setup command with network: its own network namespace as always (only `lo`), the egress proxy's socket, and
   * the forwarder in front of the command (egress/session.ts). Any user can run it: no root, no slirp4netns.
   */
  async spawn(inner: string[], options: ExecOptions = {}): Promise<ExecResult> {
    this.job.assertUsable();
    const grant = egressGrant(options.network);
    if (!grant) return this.spawnIn(inner, options);
    const env = { ...options.env, ...proxyEnv() };
    return runWithEgress(grant, (egressDir) =>
      egressDir ? this.spawnIn(forwardedArgv(inner), { ...options, env }, egressDir) : this.spawnIn(inner, options),
    );
  }

  private async spawnIn(inner: string[], options: ExecOptions, egressDir?: string): Promise<ExecResult> {
    const env = { ...baseEnv(BWRAP_HOME), ...options.env };
    // The job deadline bounds every command too; close() aborts whatever still runs.
    const timeoutMs = Math.max(1, Math.min(options.timeoutMs ?? this.cfg.defaultTimeoutMs, this.job.remainingMs()));
    const ac = new AbortController();
    const onAbort = () => ac.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) ac.abort();
    const oomBefore = await this.cgroup?.oomKills();
    const run = runProcess(this.argvFor(inner, BWRAP_WORKDIR, env, { egressDir }), {
      cwd: '/',
      // bwrap itself gets only what it needs to find setpriv/bwrap; --clearenv empties the sandbox's.
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      timeoutMs,
      signal: ac.signal,
      maxOutputBytes: options.maxOutputBytes ?? this.cfg.maxOutputBytes,
      stdin: options.stdin,
      stdinStream: options.stdinStream,
      stdoutSink: options.stdoutSink,
    });
    this.running.set(ac, run);
    const stopWatch = this.job.watch(() => ac.abort());
    try {
      const r = await run;
      await stopWatch();
      const over = this.job.overBudget;
      if (over) {
        r.exitCode = null;
        r.cancelled = options.signal?.aborted ?? false;
        r.stderr = appendNote(r.stderr, over.message);
      }
      // Say why a process vanished: the model (and the log) should see the limit, not a bare "Killed".
      if (this.cgroup && (await this.cgroup.oomKills()) > (oomBefore ?? 0)) {
        r.stderr = appendNote(
          r.stderr,
          `sandbox: a process was killed: the job's memory limit of ${this.cfg.memoryMb} MiB was reached`,
        );
      }
      return r;
    } finally {
      await stopWatch();
      this.running.delete(ac);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  close(): Promise<void> {
    return this.job.close(async () => {
      for (const ac of this.running.keys()) ac.abort();
      await Promise.allSettled([...this.running.values()]);
      await fs.rm(this.stateDir, { recursive: true, force: true });
      await this.cgroup?.close();
    });
  }
}
