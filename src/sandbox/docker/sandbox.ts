import type { Duplex } from 'node:stream';
import Docker from 'dockerode';
import { MEASURE_SCRIPT, parseUsage, type WorkspaceUsage } from '../budget.js';
import { DockerSandboxConfigSchema, type DockerSandboxConfig } from '../config.js';
import { egressGrant, forwardedArgv, proxyEnv, runWithEgress } from '../egress/index.js';
import { JobWorkspace, resolveWorkspaceDir } from '../jobWorkspace.js';
import { baseEnv } from '../local.js';
import { appendNote, CappedBuffer, cancelledBeforeStart } from '../process.js';
import type { ExecOptions, ExecResult, Sandbox } from '../types.js';
import { shellCommand } from '../shellCommand.js';
import { CONTAINER_HOME, containerOptions } from './containerSpec.js';
import {
  engineUnreachable,
  ensureDockerImage,
  isGone,
  removeContainer,
  SandboxUnavailableError,
  type DockerError,
} from './engine.js';
import { execWrapperProgram, sweepProgram, SWEEP_FAILED_EXIT } from './programs.js';
import { cappedSink, execExitCode, rootExec, sink, waitForEnd } from './streams.js';

/** After a kill, how long the exec's output stream may stay open (a setsid'd daemon holding it) before we stop reading. */
const KILL_GRACE_MS = 3000;

/** One started exec: the engine's handle, its stream, and the output read from it so far. */
interface RunningExec {
  exec: Docker.Exec;
  stream: Duplex;
  out: CappedBuffer;
  err: CappedBuffer;
  ended: Promise<void>;
}

/** How a command ended, before its exit code is asked for. */
interface Ending {
  timedOut: boolean;
  cancelled: boolean;
}

/**
 * One container per job: the workspace bind-mounted read-write at /workspace and nothing else writable but tmpfs
 * /tmp and HOME; no network, no capabilities, no privilege gain, commands as a non-root user, memory/CPU/pids limits,
 * no host environment. The container's PID 1 (init.py) exits at the job time limit, so even a runner that dies
 * without closing it cannot leave it running longer than that (and `reapStaleSandboxes` removes it sooner).
 * Commands are `docker exec`s, one at a time, each under exec-wrapper.sh, whose sweep leaves no process of the
 * sandbox user running. The host never touches a file in the workspace for the model: the Leaf tools run inside.
 */
export class DockerSandbox implements Sandbox {
  readonly kind = 'docker' as const;
  readonly workdir: string;
  /** Commands wait here for the one before them (see spawn). */
  private queue: Promise<void> = Promise.resolve();

  private constructor(
    private readonly docker: Docker,
    private readonly container: Docker.Container,
    private readonly cfg: DockerSandboxConfig,
    private readonly job: JobWorkspace,
  ) {
    this.workdir = cfg.workdir;
    job.measureWith(() => this.measureWorkspace());
    job.whenExpired(() => void this.container.kill().catch(() => {}));
  }

  get containerId(): string {
    return this.container.id;
  }

  /** Workspace directory on the host (real path). */
  get hostDir(): string {
    return this.job.hostDir;
  }

  static async create(
    workspaceDir: string,
    config: Partial<Omit<DockerSandboxConfig, 'kind'>> = {},
    opts: { docker?: Docker } = {},
  ): Promise<DockerSandbox> {
    const cfg = DockerSandboxConfigSchema.parse({ ...config, kind: 'docker' });
    const docker = opts.docker ?? new Docker(cfg.socketPath ? { socketPath: cfg.socketPath } : undefined);
    await ensureDockerImage(docker, cfg.image);
    const job = await JobWorkspace.claim(await resolveWorkspaceDir(workspaceDir), cfg);
    let container: Docker.Container | undefined;
    try {
      container = await docker.createContainer(containerOptions(cfg, job.hostDir, job.owner));
      await container.start();
    } catch (err) {
      if (container) await container.remove({ force: true }).catch(() => {});
      await job.release();
      throw err;
    }
    return new DockerSandbox(docker, container, cfg, job);
  }

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    // With network, the clean shell (env -i) must keep the proxy variables: they go in with the command's own.
    const env = options.network ? { ...options.env, ...proxyEnv() } : options.env;
    const shell = shellCommand(command, { ...options, env }, baseEnv(CONTAINER_HOME));
    return this.spawn(shell.argv, shell.options);
  }

  /**
   * Commands run one at a time: the sweep after each one kills every process of the sandbox user, which is only
   * exact when no other command is running. (The Leaf loop and solve() never run two at once anyway.)
   */
  async spawn(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    this.job.assertUsable();
    if (options.signal?.aborted) return cancelledBeforeStart();
    const turn = this.queue.then(() => this.spawnNow(argv, options));
    this.queue = turn.then(
      () => {},
      () => {},
    );
    return turn;
  }

  private async spawnNow(argv: string[], options: ExecOptions): Promise<ExecResult> {
    this.job.assertUsable();
    const grant = egressGrant(options.network);
    if (!grant) return this.runIn(this.container, argv, options);
    // A setup command with network: a container of its own with the same workspace, limits and user, no interface
    // but loopback, and the egress proxy's socket (egress/session.ts); removed, with every process in it, as soon
    // as the command is done. The job's container never sees the socket, so nothing the model runs has network.
    return runWithEgress(grant, (egressDir) =>
      egressDir ? this.runNetworked(egressDir, argv, options) : this.runIn(this.container, argv, options),
    );
  }

  private async runNetworked(egressDir: string, argv: string[], options: ExecOptions): Promise<ExecResult> {
    const net = await this.docker.createContainer(
      containerOptions(this.cfg, this.job.hostDir, this.job.owner, egressDir),
    );
    try {
      await net.start();
      // The proxy variables in the exec's environment too, for spawn() callers (exec()'s clean shell has them).
      return await this.runIn(net, forwardedArgv(argv), { ...options, env: { ...options.env, ...proxyEnv() } });
    } finally {
      await removeContainer(net).catch(() => {});
    }
  }

  private async runIn(container: Docker.Container, argv: string[], options: ExecOptions): Promise<ExecResult> {
    const started = Date.now();
    if (options.signal?.aborted) return cancelledBeforeStart();
    const run = await this.startExec(container, argv, options);
    const ending = await this.waitWithLimits(container, run, options);
    // The job time limit killed the container under this command.
    if (this.job.expired && !ending.cancelled) ending.timedOut = true;

    const exitCode = await execExitCode(run.exec);
    // A wrapper killed by a timeout's sweep never got to its own sweep: make sure, and believe only a clean one.
    if (ending.timedOut || ending.cancelled || exitCode === null || exitCode === SWEEP_FAILED_EXIT) {
      if (!this.job.expired && !this.job.closed && !(await this.sweep(container))) {
        this.markBroken('processes of the sandbox user survived the command');
      }
    }
    const over = this.job.overBudget;
    return {
      exitCode: ending.timedOut || ending.cancelled || over ? null : exitCode,
      stdout: run.out.text(),
      stderr: over ? appendNote(run.err.text(), over.message) : run.err.text(),
      timedOut: ending.timedOut,
      cancelled: ending.cancelled && !ending.timedOut,
      stdoutTruncated: run.out.dropped,
      stderrTruncated: run.err.dropped,
      durationMs: Date.now() - started,
    };
  }

  /** Starts argv under the root exec wrapper and begins reading its output. */
  private async startExec(container: Docker.Container, argv: string[], options: ExecOptions): Promise<RunningExec> {
    const cap = options.maxOutputBytes ?? this.cfg.maxOutputBytes;
    const env: Record<string, string> = { ...baseEnv(CONTAINER_HOME), ...options.env };
    // The root wrapper is a non-interactive bash: it would source BASH_ENV before anything else.
    delete env.BASH_ENV;
    const hasStdin = options.stdin !== undefined || options.stdinStream !== undefined;
    let exec: Docker.Exec;
    let stream: Duplex;
    try {
      exec = await container.exec({
        // Root (holding only CAP_KILL) starts the command as the sandbox user and, once it returns, kills what it
        // left behind; nothing the command does can stop or fool it (see exec-wrapper.sh).
        Cmd: [
          'bash',
          '-c',
          execWrapperProgram(),
          'sandbox',
          String(this.job.owner.uid),
          String(this.job.owner.gid),
          ...argv,
        ],
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        WorkingDir: this.workdir,
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
    const err = new CappedBuffer(cap);
    this.docker.modem.demuxStream(
      stream,
      options.stdoutSink ? cappedSink(options.stdoutSink, out) : sink(out),
      sink(err),
    );
    const ended = waitForEnd(stream);
    if (options.stdinStream) {
      options.stdinStream.on('error', () => stream.destroy());
      options.stdinStream.pipe(stream);
    } else if (hasStdin) stream.end(options.stdin);
    return { exec, stream, out, err, ended };
  }

  /** Waits for the exec's stream to end, killing the command at its timeout, on abort, or past the disk budget. */
  private async waitWithLimits(container: Docker.Container, run: RunningExec, options: ExecOptions): Promise<Ending> {
    const ending: Ending = { timedOut: false, cancelled: false };
    let killing: Promise<void> | undefined;
    const kill = () => {
      killing ??= (async () => {
        await this.sweep(container);
        // The sweep ends every process that could hold the stream; stop reading after a grace period regardless.
        const grace = setTimeout(() => run.stream.destroy(), KILL_GRACE_MS);
        await run.ended;
        clearTimeout(grace);
      })();
    };
    const timer = setTimeout(() => {
      ending.timedOut = true;
      kill();
    }, options.timeoutMs ?? this.cfg.defaultTimeoutMs);
    const onAbort = () => {
      ending.cancelled = true;
      kill();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const stopWatch = this.job.watch(kill);
    await run.ended;
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    if (killing) await killing;
    await stopWatch();
    return ending;
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
      const r = await rootExec(this.docker, container, ['bash', '-c', sweepProgram()], 30_000);
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
      const argv = ['bash', '-c', MEASURE_SCRIPT, 'measure', this.workdir];
      const r = await rootExec(this.docker, this.container, argv, 120_000);
      if (r === 'gone') return { kib: 0, files: 0 };
      if (r.exitCode === 0) return parseUsage(r.stdout);
      last = r.exitCode === null ? 'no answer within 120s' : `exit ${r.exitCode}`;
    }
    throw new Error(last);
  }

  /** Something is wrong that later commands must not run into: the container is killed and every use fails. */
  private markBroken(reason: string): void {
    this.job.markBroken(reason);
    void this.container.kill().catch(() => {});
  }

  private explainExecError(err: unknown): Error {
    const e = err as DockerError;
    if (this.job.expired) return this.job.timeLimitError();
    if (e.statusCode === 404 || e.statusCode === 409) {
      return new Error(
        `sandbox container ${this.container.id.slice(0, 12)} is no longer running: ${e.json?.message ?? e.message}`,
      );
    }
    if (engineUnreachable(e)) return new SandboxUnavailableError(`Docker engine not reachable (${e.code})`);
    return err instanceof Error ? err : new Error(String(err));
  }

  /** Removes the container (killing everything in it) and gives the workspace back to its owner. */
  close(): Promise<void> {
    return this.job.close(() => removeContainer(this.container));
  }
}
