import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import { Writable, type Duplex } from 'node:stream';
import Docker from 'dockerode';
import { DockerSandboxConfigSchema, jobTimeLimitError, parseUser, type DockerSandboxConfig } from './config.js';
import { HostFiles } from './hostFiles.js';
import { InsideFilesSandbox } from './insideFiles.js';
import { baseEnv } from './local.js';
import { MEASURE_SCRIPT, parseUsage, WorkspaceBudget, type WorkspaceUsage } from './budget.js';
import { chownTree, claimWorkspace, type WorkspaceOwner } from './ownership.js';
import { appendNote, CappedBuffer, cancelledBeforeStart } from './process.js';
import type { ExecOptions, ExecResult, Sandbox } from './types.js';

/** Labels on every sandbox container, so the reaper can find the ones a crashed runner left behind. */
export const SANDBOX_LABEL = 'dev.frognano.sandbox';
const LABEL_HOST = 'dev.frognano.host';
const LABEL_PID = 'dev.frognano.pid';
const LABEL_INSTANCE = 'dev.frognano.instance';
const LABEL_CREATED = 'dev.frognano.created-ms';
const LABEL_WORKSPACE = 'dev.frognano.workspace';
/** uid:gid the workspace had before it was chowned to the sandbox user; the reaper gives it back. */
const LABEL_WORKSPACE_OWNER = 'dev.frognano.workspace-owner';
/** Distinguishes this runner process from an earlier one that had the same pid (restarted container). */
const INSTANCE_ID = randomUUID();

export const CONTAINER_WORKDIR = '/workspace';
const CONTAINER_HOME = '/home/agent';
/**
 * Kills every process in the container that does not run as root, until none is left (or gives up: false). Run as
 * root holding CAP_KILL, so processes of the sandbox user can neither signal it nor escape it; `kill -1` spares
 * PID 1 and the caller; the scan repeats the kill while anything of another uid (a fork racing the first kill) is
 * still alive. Zombies (state Z/X) are already dead; PID 1 reaps them. No forks: it must work with the pids limit
 * exhausted.
 */
const SWEEP_FN =
  'sweep() { local i f k v s u left; for ((i = 0; i < 100; i++)); do kill -KILL -1 2>/dev/null; left=; ' +
  'for f in /proc/[0-9]*/status; do s=; u=; ' +
  '{ while read -r k v _; do case $k in State:) s=$v;; Uid:) u=$v; break;; esac; done < "$f"; } 2>/dev/null; ' +
  'if [ -n "$u" ] && [ "$u" != 0 ] && [ "$s" != Z ] && [ "$s" != X ]; then left=1; break; fi; done; ' +
  '[ -z "$left" ] && return 0; done; return 1; };';
/**
 * PID 1 of every sandbox container (python3, as root): it reaps orphans (so killed daemons leave no zombies to fill
 * the pids limit), exits at the job time limit (so the container ends even if the runner dies), and on SIGUSR1
 * (sent by the engine, no new process needed) kills every process that does not run as root, until none is left:
 * that works even while a fork bomb holds every pid, when no exec could start. It forks nothing, and signals from
 * the sandbox user cannot reach it (another uid; a namespace's PID 1 ignores what it does not handle).
 */
const INIT_SCRIPT = `import os, signal, sys, time
end = time.monotonic() + int(sys.argv[1])
def reap(*_):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
def others():
    for p in os.listdir('/proc'):
        if not p.isdigit() or p == '1':
            continue
        state = uid = None
        try:
            with open('/proc/%s/status' % p) as f:
                for line in f:
                    if line.startswith('State:'):
                        state = line.split()[1]
                    elif line.startswith('Uid:'):
                        uid = int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
        if uid not in (None, 0) and state not in ('Z', 'X'):
            yield int(p)
def sweep(*_):
    for _ in range(100):
        left = False
        for pid in others():
            left = True
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        reap()
        if not left:
            return
signal.signal(signal.SIGCHLD, reap)
signal.signal(signal.SIGUSR1, sweep)
while time.monotonic() < end:
    time.sleep(min(5, max(0.01, end - time.monotonic())))
`;
/** The exit status of an exec whose sweep failed (processes survived); the sandbox is then unusable. */
const SWEEP_FAILED_EXIT = 253;
/**
 * Every command runs under this, as root with only CAP_KILL/SETUID/SETGID: it starts the command as the sandbox
 * user (setpriv: uid, gid, no supplementary groups; the kernel clears every capability on the switch and
 * no-new-privileges keeps it so), waits for it, then sweeps. A daemon that left the command's session, a fake pid
 * file, or a command that kills its parent cannot change that: the wrapper is another uid, and it reads nothing
 * the sandbox can write. Its own stderr goes to /dev/null (fd 3 carries the command's), so no "Killed" notices.
 */
const EXEC_WRAPPER =
  'exec 3>&2 2>/dev/null; uid=$1; gid=$2; shift 2; ' +
  SWEEP_FN +
  ' setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all -- "$@" 2>&3 3>&-; rc=$?; ' +
  `sweep || exit ${SWEEP_FAILED_EXIT}; exit $rc`;
/** After a kill, how long the exec's output stream may stay open (a setsid'd daemon holding it) before we stop reading. */
const KILL_GRACE_MS = 3000;

/** The engine or the image is missing: the message says how to fix it. */
export class SandboxUnavailableError extends Error {
  /** What is wrong, without the fix (the message is `reason: hint`). */
  readonly reason: string;
  /** How to fix it, kept apart so reports that print hints on their own line say it once. */
  readonly hint?: string;

  constructor(reason: string, hint?: string) {
    super(hint ? `${reason}: ${hint}` : reason);
    this.name = 'SandboxUnavailableError';
    this.reason = reason;
    this.hint = hint;
  }
}

interface DockerError {
  statusCode?: number;
  code?: string;
  message?: string;
  json?: { message?: string };
}

function engineUnreachable(e: DockerError): boolean {
  return ['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH'].includes(e.code ?? '');
}

function describeEngine(docker: Docker): string {
  const m = docker.modem as unknown as { socketPath?: string; host?: string; port?: number };
  return m.socketPath ? String(m.socketPath) : `${m.host ?? 'localhost'}:${m.port ?? ''}`;
}

export function imageBuildHint(image: string): string {
  return (
    `build it with \`docker build -t ${image} -f runner/sandbox.Dockerfile runner/\`, ` +
    `or without a registry \`scripts/build-sandbox-image.sh ${image}\``
  );
}

/** Throws SandboxUnavailableError with a fix when the engine is unreachable or the image is not there. */
export async function ensureDockerImage(docker: Docker, image: string): Promise<void> {
  try {
    await docker.getImage(image).inspect();
  } catch (err) {
    const e = err as DockerError;
    if (e.statusCode === 404) throw new SandboxUnavailableError(`image ${image} not found`, imageBuildHint(image));
    if (engineUnreachable(e)) {
      throw new SandboxUnavailableError(
        `Docker engine not reachable at ${describeEngine(docker)} (${e.code})`,
        'start dockerd, set DOCKER_HOST, or use FROGNANO_SANDBOX=bwrap',
      );
    }
    throw err;
  }
}

function isGone(e: DockerError): boolean {
  // 404: no such container; 409: removal already in progress (AutoRemove racing us).
  return e.statusCode === 404 || e.statusCode === 409;
}

/** A Writable that feeds a CappedBuffer (the exec stream is demultiplexed into two of them). */
function sink(buf: CappedBuffer): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      buf.push(chunk);
      cb();
    },
  });
}

/**
 * The exit status of a finished exec, or null when the engine does not know it. The engine can close the stream a
 * moment before it records the exit code: poll briefly, then less often.
 */
async function execExitCode(exec: Docker.Exec): Promise<number | null> {
  for (let i = 0; i < 60; i++) {
    const info = await exec.inspect().catch(() => null);
    if (!info) return null;
    if (!info.Running && typeof info.ExitCode === 'number') return info.ExitCode;
    await new Promise((r) => setTimeout(r, i < 20 ? 5 : 25));
  }
  return null;
}

function waitForEnd(stream: Duplex): Promise<void> {
  return new Promise((resolve) => {
    const done = () => resolve();
    stream.once('end', done);
    stream.once('close', done);
    stream.once('error', done);
  });
}

/**
 * The container every command runs in (and, with network, the short-lived one a setup command with network runs
 * in): the workspace bind-mounted read-write at /workspace and nothing else writable but tmpfs /tmp and HOME; no
 * capabilities for commands, no privilege gain, memory/CPU/pids limits, no host environment.
 */
function containerOptions(cfg: DockerSandboxConfig, hostDir: string, owner: WorkspaceOwner, network: boolean): Docker.ContainerCreateOptions {
  const mb = 1024 * 1024;
  return {
    Image: cfg.image,
    Entrypoint: [],
    // PID 1 (INIT_SCRIPT), as root like the exec wrapper and the sweep: the sandbox user cannot signal it.
    Cmd: ['python3', '-c', INIT_SCRIPT, String(Math.ceil(cfg.jobTimeoutMs / 1000))],
    User: '0:0',
    WorkingDir: CONTAINER_WORKDIR,
    // The complete environment: nothing of the runner's (tokens, keys) reaches the container.
    Env: Object.entries(baseEnv(CONTAINER_HOME)).map(([k, v]) => `${k}=${v}`),
    Hostname: 'sandbox',
    NetworkDisabled: !network,
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
    HostConfig: {
      // With network: the engine's default bridge (the internet, not the runner's loopback services).
      NetworkMode: network ? 'bridge' : 'none',
      // A Mount, not a "src:dst" Bind string, so a path with ':' or ',' cannot change its meaning.
      Mounts: [{ Type: 'bind', Source: hostDir, Target: CONTAINER_WORKDIR, ReadOnly: false }],
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
    },
  };
}

/**
 * One container per job: the workspace bind-mounted read-write at /workspace and nothing else writable but tmpfs
 * /tmp and HOME; no network, no capabilities, no privilege gain, commands as a non-root user, memory/CPU/pids limits, no host
 * environment. The container's PID 1 exits at the job time limit, so even a runner that dies without closing it
 * cannot leave it running longer than that (and `reapStaleSandboxes` removes it sooner).
 * Commands are `docker exec`s, one at a time, each followed by a sweep that leaves no process of the sandbox user
 * running; file operations run inside the container too (InsideFiles), never on the host.
 */
export class DockerSandbox extends InsideFilesSandbox implements Sandbox {
  readonly kind = 'docker' as const;
  readonly workdir = CONTAINER_WORKDIR;
  protected readonly files: HostFiles;
  private readonly jobTimer: NodeJS.Timeout;
  private expired = false;
  private closing: Promise<void> | undefined;
  /** Commands wait here for the one before them (see spawn). */
  private queue: Promise<void> = Promise.resolve();
  /** Why the sandbox may not be used any more (e.g. processes survived a sweep). */
  private broken: string | undefined;
  private readonly budget: WorkspaceBudget;

  private constructor(
    private readonly docker: Docker,
    private readonly container: Docker.Container,
    private readonly cfg: DockerSandboxConfig,
    /** Workspace directory on the host (real path). */
    readonly hostDir: string,
    private readonly owner: WorkspaceOwner,
  ) {
    super();
    this.files = new HostFiles(hostDir, owner.chownWrites ? { uid: owner.uid, gid: owner.gid } : undefined);
    this.budget = new WorkspaceBudget(() => this.measureWorkspace(), { mb: cfg.workspaceMb, files: cfg.workspaceFiles }, cfg.workspaceCheckMs);
    this.jobTimer = setTimeout(() => {
      this.expired = true;
      void this.container.kill().catch(() => {});
    }, cfg.jobTimeoutMs);
    this.jobTimer.unref();
  }

  get containerId(): string {
    return this.container.id;
  }

  static async create(
    workspaceDir: string,
    config: Partial<Omit<DockerSandboxConfig, 'kind'>> = {},
    opts: { docker?: Docker } = {},
  ): Promise<DockerSandbox> {
    const cfg = DockerSandboxConfigSchema.parse({ ...config, kind: 'docker' });
    const docker = opts.docker ?? new Docker(cfg.socketPath ? { socketPath: cfg.socketPath } : undefined);
    await ensureDockerImage(docker, cfg.image);
    const st = await fs.stat(workspaceDir).catch(() => null);
    if (!st?.isDirectory()) throw new Error(`workspace ${workspaceDir} is not a directory`);
    const hostDir = await fs.realpath(workspaceDir);
    const owner = await claimWorkspace(hostDir, parseUser(cfg.user));
    let container: Docker.Container | undefined;
    try {
      container = await docker.createContainer(containerOptions(cfg, hostDir, owner, false));
      await container.start();
    } catch (err) {
      if (container) await container.remove({ force: true }).catch(() => {});
      await owner.restore();
      throw err;
    }
    return new DockerSandbox(docker, container, cfg, hostDir, owner);
  }

  protected override assertUsable(): void {
    if (this.closing) throw new Error('sandbox is closed');
    if (this.expired) {
      throw jobTimeLimitError(this.cfg.jobTimeoutMs);
    }
    if (this.broken) throw new Error(`sandbox stopped: ${this.broken}`);
    if (this.budget.exceeded) throw this.budget.exceeded;
  }

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    return this.spawn(['bash', '-lc', command], options);
  }

  /**
   * Commands run one at a time: the sweep after each one kills every process of the sandbox user, which is only
   * exact when no other command is running. (The Leaf loop and solve() never run two at once anyway.)
   */
  async spawn(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    this.assertUsable();
    if (options.signal?.aborted) return cancelledBeforeStart();
    const turn = this.queue.then(() => this.spawnNow(argv, options));
    this.queue = turn.then(
      () => {},
      () => {},
    );
    return turn;
  }

  private async spawnNow(argv: string[], options: ExecOptions): Promise<ExecResult> {
    this.assertUsable();
    if (!options.network) return this.runIn(this.container, argv, options);
    // A setup command with network: a container of its own on the engine's bridge, with the same workspace,
    // limits and user, removed (with every process in it) as soon as the command is done. The job's container
    // never gets network, so nothing the model runs later has it.
    const net = await this.docker.createContainer(containerOptions(this.cfg, this.hostDir, this.owner, true));
    try {
      await net.start();
      return await this.runIn(net, argv, options);
    } finally {
      await removeContainer(net).catch(() => {});
    }
  }

  private async runIn(container: Docker.Container, argv: string[], options: ExecOptions): Promise<ExecResult> {
    const started = Date.now();
    const cap = options.maxOutputBytes ?? this.cfg.maxOutputBytes;
    if (options.signal?.aborted) return cancelledBeforeStart();
    const cwd = options.cwd ? await this.files.resolveDirInside(options.cwd, CONTAINER_WORKDIR) : CONTAINER_WORKDIR;
    const env: Record<string, string> = { ...baseEnv(CONTAINER_HOME), ...options.env };
    // The root wrapper is a non-interactive bash: it would source BASH_ENV before anything else.
    delete env.BASH_ENV;
    const hasStdin = options.stdin !== undefined;
    let exec: Docker.Exec;
    let stream: Duplex;
    try {
      exec = await container.exec({
        // Root (holding only CAP_KILL) starts the command as the sandbox user and, once it returns, kills what it
        // left behind; nothing the command does can stop or fool it (see EXEC_WRAPPER).
        Cmd: ['bash', '-c', EXEC_WRAPPER, 'sandbox', String(this.owner.uid), String(this.owner.gid), ...argv],
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        WorkingDir: cwd,
        User: '0:0',
        AttachStdin: hasStdin,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      });
      stream = (await exec.start({ hijack: hasStdin, stdin: hasStdin })) as Duplex;
    } catch (err) {
      throw this.explainExecError(err);
    }
    const out = new CappedBuffer(cap);
    const errBuf = new CappedBuffer(cap);
    this.docker.modem.demuxStream(stream, sink(out), sink(errBuf));
    const ended = waitForEnd(stream);
    if (hasStdin) stream.end(options.stdin);

    let timedOut = false;
    let cancelled = false;
    let killing: Promise<void> | undefined;
    const kill = () => {
      killing ??= (async () => {
        await this.sweep(container);
        // The sweep ends every process that could hold the stream; stop reading after a grace period regardless.
        const grace = setTimeout(() => stream.destroy(), KILL_GRACE_MS);
        await ended;
        clearTimeout(grace);
      })();
    };
    const timeoutMs = options.timeoutMs ?? this.cfg.defaultTimeoutMs;
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    const onAbort = () => {
      cancelled = true;
      kill();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const stopWatch = this.budget.watch(kill);
    await ended;
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    if (killing) await killing;
    await stopWatch();
    // The job time limit killed the container under this command.
    if (this.expired && !cancelled) timedOut = true;

    const exitCode = await execExitCode(exec);
    // A wrapper killed by a timeout's sweep never got to its own sweep: make sure, and believe only a clean one.
    if (timedOut || cancelled || exitCode === null || exitCode === SWEEP_FAILED_EXIT) {
      if (!this.expired && !this.closing && !(await this.sweep(container))) this.markBroken('processes of the sandbox user survived the command');
    }
    const over = this.budget.exceeded;
    return {
      exitCode: timedOut || cancelled || over ? null : exitCode,
      stdout: out.text(),
      stderr: over ? appendNote(errBuf.text(), over.message) : errBuf.text(),
      timedOut,
      cancelled: cancelled && !timedOut,
      stdoutTruncated: out.dropped,
      stderrTruncated: errBuf.dropped,
      durationMs: Date.now() - started,
    };
  }

  /**
   * Kills every process of the sandbox user (run as root with CAP_KILL: the sandbox cannot signal it back, and it
   * trusts no file the sandbox can write). True when none is left.
   */
  async sweep(container: Docker.Container = this.container): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      // PID 1 kills first (it needs no free pid), then an exec makes sure (and kills what forked meanwhile).
      try {
        await container.kill({ signal: 'SIGUSR1' });
      } catch (err) {
        if (isGone(err as DockerError)) return true;
      }
      const r = await this.rootExec(container, ['bash', '-c', `${SWEEP_FN} sweep`], 30_000);
      if (r === 'gone' || r.exitCode === 0) return true;
      await new Promise((res) => setTimeout(res, 200));
    }
    return false;
  }

  /** The workspace's size and entries, walked as root (which only CAP_DAC_READ_SEARCH lets read every directory). */
  private async measureWorkspace(): Promise<WorkspaceUsage> {
    let last = '';
    // A sweep (kill -1 at the end of a command) can kill a measurement that runs beside it: try again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const r = await this.rootExec(this.container, ['bash', '-c', MEASURE_SCRIPT, 'measure', CONTAINER_WORKDIR], 120_000);
      if (r === 'gone') return { kib: 0, files: 0 };
      if (r.exitCode === 0) return parseUsage(r.stdout);
      last = r.exitCode === null ? 'no answer within 120s' : `exit ${r.exitCode}`;
    }
    throw new Error(last);
  }

  /** Runs argv as root in the container (not queued behind commands); 'gone' when the container no longer exists. */
  private async rootExec(container: Docker.Container, argv: string[], timeoutMs: number): Promise<{ exitCode: number | null; stdout: string } | 'gone'> {
    try {
      const k = await container.exec({ Cmd: argv, User: '0:0', AttachStdout: true, AttachStderr: true });
      const s = (await k.start({})) as Duplex;
      const out = new CappedBuffer(64 * 1024);
      this.docker.modem.demuxStream(s, sink(out), sink(new CappedBuffer(0)));
      const timer = setTimeout(() => s.destroy(), timeoutMs);
      await waitForEnd(s);
      clearTimeout(timer);
      return { exitCode: await execExitCode(k), stdout: out.text() };
    } catch (err) {
      // Container gone (job limit, closed): its processes are gone too.
      if (isGone(err as DockerError)) return 'gone';
      return { exitCode: null, stdout: '' };
    }
  }

  /** Something is wrong that later commands must not run into: the container is killed and every use fails. */
  private markBroken(reason: string): void {
    this.broken ??= reason;
    void this.container.kill().catch(() => {});
  }

  private explainExecError(err: unknown): Error {
    const e = err as DockerError;
    if (this.expired) {
      return jobTimeLimitError(this.cfg.jobTimeoutMs);
    }
    if (e.statusCode === 404 || e.statusCode === 409) {
      return new Error(`sandbox container ${this.container.id.slice(0, 12)} is no longer running: ${e.json?.message ?? e.message}`);
    }
    if (engineUnreachable(e)) return new SandboxUnavailableError(`Docker engine not reachable (${e.code})`);
    return err instanceof Error ? err : new Error(String(err));
  }

  /** Removes the container (killing everything in it) and gives the workspace back to its owner. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearTimeout(this.jobTimer);
      try {
        await removeContainer(this.container);
      } finally {
        await this.owner.restore();
      }
    })();
    return this.closing;
  }
}

async function removeContainer(container: Docker.Container): Promise<void> {
  try {
    await container.remove({ force: true });
  } catch (err) {
    if (!isGone(err as DockerError)) throw err;
  }
  // With AutoRemove the engine may still be removing it; wait until it is really gone.
  for (let i = 0; i < 100; i++) {
    try {
      await container.inspect();
    } catch (err) {
      if ((err as DockerError).statusCode === 404) return;
      throw err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`sandbox container ${container.id.slice(0, 12)} was not removed within 10s`);
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes sandbox containers left behind: those older than maxAgeMs, and those made on this host by a runner
 * process that no longer exists (crashed mid-job). Call it when a runner starts. `labels` narrows the search
 * (e.g. to one deployment). Workspaces on this host that were chowned for the sandbox get their owner back.
 * Returns the ids removed.
 */
export async function reapStaleSandboxes(
  docker: Docker,
  maxAgeMs: number,
  opts: { labels?: Record<string, string>; now?: number } = {},
): Promise<string[]> {
  const now = opts.now ?? Date.now();
  const label = [`${SANDBOX_LABEL}=1`, ...Object.entries(opts.labels ?? {}).map(([k, v]) => `${k}=${v}`)];
  const list = await docker.listContainers({ all: true, filters: { label } });
  const removed: string[] = [];
  for (const c of list) {
    const created = Number(c.Labels[LABEL_CREATED]) || c.Created * 1000;
    const pid = Number(c.Labels[LABEL_PID]);
    const fromHere = c.Labels[LABEL_HOST] === os.hostname();
    const ownerGone =
      fromHere && (!processAlive(pid) || (pid === process.pid && c.Labels[LABEL_INSTANCE] !== INSTANCE_ID));
    if (now - created < maxAgeMs && !ownerGone) continue;
    try {
      await removeContainer(docker.getContainer(c.Id));
      removed.push(c.Id);
      const ws = c.Labels[LABEL_WORKSPACE];
      const orig = /^(\d+):(\d+)$/.exec(c.Labels[LABEL_WORKSPACE_OWNER] ?? '');
      if (fromHere && ws && orig && (await fs.stat(ws).catch(() => null))?.isDirectory()) {
        await chownTree(ws, Number(orig[1]), Number(orig[2])).catch(() => {});
      }
    } catch {
      /* another runner reaped it first, or the engine refused: the next start tries again */
    }
  }
  return removed;
}
