import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import {
  autoCandidates,
  SandboxConfigSchema,
  type BwrapSandboxConfig,
  type DockerSandboxConfig,
  type SandboxConfigInput,
} from './config.js';
import { BwrapSandbox } from './bwrap.js';
import { DockerSandbox, ensureDockerImage, SandboxUnavailableError } from './docker/index.js';
import { fleetSetupNetworkFromEnv, NO_NETWORK_NOTE } from './egress/index.js';
import type { Sandbox } from './types.js';

export interface SandboxCheckResult {
  kind: 'docker' | 'bwrap' | 'local';
  ok: boolean;
  /** What was found, e.g. "Docker 20.10.24, image frognano-sandbox:latest present". */
  message: string;
  /** How to fix it, when not ok (or when ok but unsafe, for local). */
  hint?: string;
}

export interface SandboxCheck {
  /** The sandbox that would be used (for auto: the first usable one; docker when none is). */
  kind: 'docker' | 'bwrap' | 'local';
  ok: boolean;
  /** Every kind that was checked, in order. */
  checks: SandboxCheckResult[];
}

function dockerFor(cfg: DockerSandboxConfig): Docker {
  return new Docker(cfg.socketPath ? { socketPath: cfg.socketPath } : undefined);
}

/**
 * Engine reachable and image present; with `smokeTest`, also starts a real sandbox from the image and runs a
 * command in it (catches derived images without bash, python3 or util-linux's setpriv, which every sandbox needs).
 */
export async function checkDocker(
  cfg: DockerSandboxConfig,
  opts: { docker?: Docker; smokeTest?: boolean } = {},
): Promise<SandboxCheckResult> {
  const docker = opts.docker ?? dockerFor(cfg);
  let version: string;
  try {
    version = (await docker.version()).Version;
  } catch (err) {
    return {
      kind: 'docker',
      ok: false,
      message: `Docker engine not reachable: ${(err as Error).message}`,
      hint: 'start dockerd (or set DOCKER_HOST), make the runner a member of the docker group, or use FROGNANO_SANDBOX=bwrap',
    };
  }
  try {
    await ensureDockerImage(docker, cfg.image);
  } catch (err) {
    // The error's message carries its hint too; keep them apart so each is said once.
    if (err instanceof SandboxUnavailableError) {
      return { kind: 'docker', ok: false, message: `Docker ${version}: ${err.reason}`, hint: err.hint };
    }
    return { kind: 'docker', ok: false, message: `Docker ${version}: ${(err as Error).message}` };
  }
  if (opts.smokeTest) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'frognano-check-'));
    let note = '';
    try {
      const sb = await DockerSandbox.create(dir, cfg, { docker });
      try {
        const r = await sb.exec('echo ok', { timeoutMs: 30_000 });
        if (r.exitCode !== 0 || r.stdout.trim() !== 'ok') {
          throw new Error(
            (r.stderr || r.stdout).trim().split('\n').slice(-2).join(' ') ||
              (r.timedOut ? 'timed out' : `exit ${r.exitCode}`),
          );
        }
        note = await setupNetworkNote(sb);
      } finally {
        await sb.close();
      }
    } catch (err) {
      return {
        kind: 'docker',
        ok: false,
        message: `Docker ${version}: a sandbox from ${cfg.image} cannot run commands: ${(err as Error).message}`,
        hint: 'the image needs bash, python3, coreutils and util-linux (setpriv); start from runner/sandbox.Dockerfile',
      };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    return {
      kind: 'docker',
      ok: true,
      message: `Docker ${version}, image ${cfg.image} runs sandboxed commands${note}`,
    };
  }
  return { kind: 'docker', ok: true, message: `Docker ${version}, image ${cfg.image} present` };
}

/** Asks the forwarder for a name the allowlist lacks: the proxy answering 403 proves the whole path works. */
const EGRESS_PROBE = `python3 -c "import socket
s = socket.create_connection(('127.0.0.1', 3128), 5)
s.sendall(b'CONNECT frognano-doctor.invalid:443 HTTP/1.1\\r\\n\\r\\n')
print(s.recv(200).decode().splitlines()[0])"`;

/**
 * Which setup-network mode this sandbox offers here (`frognano doctor`): proxy-only egress up to the fleet's
 * ceiling when a real setup command reached the egress proxy, else none and why.
 */
export async function setupNetworkNote(sb: Sandbox, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  let ceiling: string;
  try {
    ceiling = fleetSetupNetworkFromEnv(env).ceiling;
  } catch (err) {
    return `; setup.network: ${(err as Error).message}`;
  }
  if (ceiling === 'off') return '; setup.network: off on this runner (FROGNANO_SETUP_NETWORK=off)';
  const r = await sb.exec(EGRESS_PROBE, { network: true, clean: true, timeoutMs: 30_000 });
  const why = new RegExp(`^${NO_NETWORK_NOTE}(.*)$`, 'm').exec(r.stderr)?.[1];
  if (why || !/ 403 /.test(r.stdout) || !r.blocked?.length) {
    const detail = why ?? ((r.stderr || r.stdout).trim().split('\n').slice(-2).join(' ') || `exit ${r.exitCode}`);
    return `; setup commands with network (setup.network) would have none: ${detail}`;
  }
  return `; setup.network: proxy-only egress works, up to \`${ceiling}\` (FROGNANO_SETUP_NETWORK)`;
}

/** Runs `true` in a real bwrap sandbox on a temp directory: proves user namespaces, binds and setpriv all work. */
export async function checkBwrap(cfg: BwrapSandboxConfig): Promise<SandboxCheckResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'frognano-check-'));
  try {
    const sb = await BwrapSandbox.create(dir, cfg);
    try {
      const r = await sb.exec('echo ok', { timeoutMs: 15_000 });
      if (r.exitCode === 0 && r.stdout.trim() === 'ok') {
        return { kind: 'bwrap', ok: true, message: `bubblewrap works (${cfg.bwrapPath})${await setupNetworkNote(sb)}` };
      }
      const why =
        (r.stderr || r.stdout).trim().split('\n').slice(-3).join(' ') ||
        (r.timedOut ? 'timed out' : `exit ${r.exitCode}`);
      return {
        kind: 'bwrap',
        ok: false,
        message: `bubblewrap failed: ${why}`,
        hint: /No such file|not found/i.test(why)
          ? 'install bubblewrap (apt-get install bubblewrap)'
          : 'bwrap needs user namespaces: sysctl kernel.unprivileged_userns_clone=1 (and, in a container, a seccomp/AppArmor profile that allows them)',
      };
    } finally {
      await sb.close();
    }
  } catch (err) {
    const msg = (err as Error).message;
    return {
      kind: 'bwrap',
      ok: false,
      message: `bubblewrap unavailable: ${msg}`,
      hint:
        (err as NodeJS.ErrnoException).code === 'ENOENT'
          ? 'install bubblewrap (apt-get install bubblewrap)'
          : undefined,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** For `frognano doctor`: is the configured sandbox usable here (a real command is run in it), and if not, how to fix it. */
export async function checkSandbox(input: SandboxConfigInput): Promise<SandboxCheck> {
  const cfg = SandboxConfigSchema.parse(input);
  switch (cfg.kind) {
    case 'docker': {
      const r = await checkDocker(cfg, { smokeTest: true });
      return { kind: 'docker', ok: r.ok, checks: [r] };
    }
    case 'bwrap': {
      const r = await checkBwrap(cfg);
      return { kind: 'bwrap', ok: r.ok, checks: [r] };
    }
    case 'local':
      return {
        kind: 'local',
        ok: true,
        checks: [
          {
            kind: 'local',
            ok: true,
            message: 'local sandbox: commands run on this machine with no isolation',
            hint: 'use only with trusted repositories and models; prefer docker or bwrap',
          },
        ],
      };
    case 'auto': {
      const { docker, bwrap } = autoCandidates(cfg);
      const d = await checkDocker(docker, { smokeTest: true });
      if (d.ok) return { kind: 'docker', ok: true, checks: [d] };
      const b = await checkBwrap(bwrap);
      return { kind: b.ok ? 'bwrap' : 'docker', ok: b.ok, checks: [d, b] };
    }
  }
}

/** Turns `auto` into the concrete config to use: docker when usable, else bwrap, never local. */
export async function resolveSandboxConfig(
  input: SandboxConfigInput,
): Promise<
  DockerSandboxConfig | BwrapSandboxConfig | Extract<ReturnType<typeof SandboxConfigSchema.parse>, { kind: 'local' }>
> {
  const cfg = SandboxConfigSchema.parse(input);
  if (cfg.kind !== 'auto') return cfg;
  const { docker, bwrap } = autoCandidates(cfg);
  const d = await checkDocker(docker);
  if (d.ok) return docker;
  const b = await checkBwrap(bwrap);
  if (b.ok) return bwrap;
  throw new SandboxUnavailableError(
    `no isolating sandbox is usable: ${d.message}${d.hint ? ` (${d.hint})` : ''}; ${b.message}${b.hint ? ` (${b.hint})` : ''}. ` +
      'Set FROGNANO_SANDBOX=local only to run without isolation.',
  );
}
