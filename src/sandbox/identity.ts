import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import Docker from 'dockerode';
import { resolveSandboxConfig } from './check.js';
import type { SandboxConfigInput } from './config.js';

/**
 * The sandbox in cache keys (set-up snapshot keys, verification base-result keys): what a set-up's product and a test
 * run's result depend on besides the repository.
 * - docker: the image's ID (`sha256:…`, a hash of its content), never its tag: a tag moved to a rebuilt image (a new
 *   Python, a new base) gets a new identity, so nothing made in the old image is reused in it.
 * - bwrap (and local): the host's own programs, which the sandbox binds read-only: /etc/os-release, the hash of the
 *   package database (/var/lib/dpkg/status: any install or upgrade changes it; the same packages on two runners give
 *   the same identity, so base results can be shared), and for the usual interpreters and toolchains in
 *   /usr/local/bin, /usr/bin and /bin their resolved path, size and mtime (tools installed outside the package manager).
 * Computed at most once a minute per configuration (the package database is a few MB).
 */
export async function sandboxIdentity(cfg: SandboxConfigInput): Promise<string> {
  const resolved = await resolveSandboxConfig(cfg);
  const memo = JSON.stringify(
    resolved.kind === 'docker' ? [resolved.kind, resolved.image, resolved.socketPath ?? ''] : [resolved.kind],
  );
  const hit = cache.get(memo);
  if (hit && Date.now() - hit.at < TTL_MS) return hit.identity;
  const identity = resolved.kind === 'docker' ? await imageIdentity(resolved) : await hostIdentity(resolved.kind);
  cache.set(memo, { identity, at: Date.now() });
  return identity;
}

const TTL_MS = 60_000;
const cache = new Map<string, { identity: string; at: number }>();

/** Forgets what sandboxIdentity computed (tests that retag an image). */
export function forgetSandboxIdentities(): void {
  cache.clear();
}

async function imageIdentity(cfg: { image: string; socketPath?: string }): Promise<string> {
  const docker = new Docker(cfg.socketPath ? { socketPath: cfg.socketPath } : undefined);
  const { Id } = await docker.getImage(cfg.image).inspect();
  if (!/^sha256:[0-9a-f]{64}$/.test(Id)) throw new Error(`image ${cfg.image} has no content ID`);
  return `docker:${Id}`;
}

/** Interpreters and toolchains whose version decides what a set-up builds. */
const TOOLS = ['python3', 'python', 'pip3', 'pip', 'node', 'npm', 'go', 'cargo', 'rustc', 'ruby', 'java', 'gcc', 'cc'];
const TOOL_DIRS = ['/usr/local/bin', '/usr/bin', '/bin'];

async function hostIdentity(kind: string): Promise<string> {
  const h = createHash('sha256');
  const part = (s: string) => h.update(`${s.length}:${s}\0`);
  part(kind);
  part(await fs.readFile('/etc/os-release', 'utf8').catch(() => ''));
  const db = await fs.readFile('/var/lib/dpkg/status').catch(() => Buffer.alloc(0));
  part(createHash('sha256').update(db).digest('hex'));
  for (const dir of TOOL_DIRS) {
    for (const tool of TOOLS) {
      const p = path.join(dir, tool);
      const real = await fs.realpath(p).catch(() => null);
      const st = real ? await fs.stat(real).catch(() => null) : null;
      if (real && st) part(`${p} -> ${real} ${st.size} ${Math.floor(st.mtimeMs)}`);
    }
  }
  return `${kind}:${h.digest('hex')}`;
}
