import { randomBytes } from 'node:crypto';
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * One control group per bwrap job: every command of the job runs in it, so memory (tmpfs pages included) and
 * processes are bounded for the job as a whole, not per process. cgroup v1 (memory + pids hierarchies) and v2
 * (a unified hierarchy with the memory and pids controllers) are both handled. The job's cgroups are created below
 * the runner's own (or FROGNANO_SANDBOX_CGROUP_PARENT), which must be writable: root, or a delegated subtree.
 * Nothing inside the sandbox can reach them (bwrap mounts no /sys, and commands have no capabilities).
 */
export interface JobCgroup {
  /** cgroup.procs files a process writes its pid to, to join the job (one per hierarchy). */
  readonly procsFiles: string[];
  /** How many times the kernel OOM-killed a process of the job so far (0 when the kernel does not say). */
  oomKills(): Promise<number>;
  /** Kills whatever is left in the job and removes its cgroups. */
  close(): Promise<void>;
}

export class CgroupUnavailableError extends Error {
  constructor(reason: string) {
    super(
      `bwrap sandbox: no writable cgroup for the job's memory and process limits (${reason}). Run the runner as root, ` +
        'give it a delegated cgroup subtree (systemd Delegate=yes; FROGNANO_SANDBOX_CGROUP_PARENT=<its path>), use the ' +
        'docker sandbox, or accept per-process limits only with FROGNANO_SANDBOX_BWRAP_CGROUP=off',
    );
    this.name = 'CgroupUnavailableError';
  }
}

const ROOT = '/sys/fs/cgroup';

interface Layout {
  version: 1 | 2;
  /** v1: controller -> directory of the parent; v2: '' -> parent directory. */
  parents: Record<string, string>;
}

/** The runner's own cgroup in each hierarchy, from /proc/self/cgroup. */
function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const c of m[1].split(',')) own.set(c, m[2]);
  }
  return own;
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(
    () => true,
    () => false,
  );
}

async function detect(parentOverride?: string): Promise<Layout> {
  const own = ownCgroups();
  const under = (mount: string, rel: string | undefined) => path.join(mount, parentOverride ?? rel ?? '/');
  // cgroup v2 with the controllers (pure v2 at /sys/fs/cgroup).
  const v2Controllers = await fs.readFile(path.join(ROOT, 'cgroup.controllers'), 'utf8').catch(() => '');
  if (/\bmemory\b/.test(v2Controllers) && /\bpids\b/.test(v2Controllers)) {
    return { version: 2, parents: { '': under(ROOT, own.get('')) } };
  }
  if (
    (await exists(path.join(ROOT, 'memory', 'cgroup.procs'))) &&
    (await exists(path.join(ROOT, 'pids', 'cgroup.procs')))
  ) {
    return {
      version: 1,
      parents: {
        memory: under(path.join(ROOT, 'memory'), own.get('memory')),
        pids: under(path.join(ROOT, 'pids'), own.get('pids')),
      },
    };
  }
  throw new CgroupUnavailableError(
    `neither cgroup v2 with memory and pids nor cgroup v1 memory and pids under ${ROOT}`,
  );
}

async function write(file: string, value: string): Promise<void> {
  await fs.writeFile(file, value);
}

async function enableControllers(dir: string): Promise<boolean> {
  await write(path.join(dir, 'cgroup.subtree_control'), '+memory +pids').catch(() => {});
  const enabled = await fs.readFile(path.join(dir, 'cgroup.subtree_control'), 'utf8').catch(() => '');
  return /\bmemory\b/.test(enabled) && /\bpids\b/.test(enabled);
}

/**
 * cgroup v2: a parent whose children get the memory and pids controllers. The runner's own cgroup usually holds
 * processes, and v2 allows no controllers below a cgroup with processes (except the root): then, unless a parent
 * was configured, an empty `frognano` cgroup below the root is used (root runners).
 */
async function v2Parent(preferred: string, configured: boolean): Promise<string> {
  if (await enableControllers(preferred)) return preferred;
  if (configured) throw new CgroupUnavailableError(`cannot enable the memory and pids controllers in ${preferred}`);
  const shared = path.join(ROOT, 'frognano');
  await fs.mkdir(shared, { recursive: true }).catch(() => {});
  await enableControllers(ROOT);
  if (await enableControllers(shared)) return shared;
  throw new CgroupUnavailableError(`cannot enable the memory and pids controllers in ${preferred} or ${shared}`);
}

/** Creates the job's cgroups with the limits; throws CgroupUnavailableError when that is not possible here. */
export async function createJobCgroup(
  limits: { memoryBytes: number; pids: number },
  parentOverride?: string,
): Promise<JobCgroup> {
  const layout = await detect(parentOverride);
  const name = `frognano-${randomBytes(6).toString('hex')}`;
  const dirs: string[] = [];
  try {
    if (layout.version === 2) {
      const parent = await v2Parent(layout.parents[''], parentOverride !== undefined);
      const dir = path.join(parent, name);
      await fs.mkdir(dir);
      dirs.push(dir);
      await write(path.join(dir, 'memory.max'), String(limits.memoryBytes));
      await write(path.join(dir, 'memory.swap.max'), '0').catch(() => {});
      await write(path.join(dir, 'pids.max'), String(limits.pids));
    } else {
      const mem = path.join(layout.parents.memory, name);
      const pids = path.join(layout.parents.pids, name);
      await fs.mkdir(mem);
      dirs.push(mem);
      await fs.mkdir(pids);
      dirs.push(pids);
      await write(path.join(mem, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      // No swap either, where the kernel accounts it (memsw must not be below the memory limit: set after it).
      if (await exists(path.join(mem, 'memory.memsw.limit_in_bytes'))) {
        await write(path.join(mem, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
      }
      await write(path.join(pids, 'pids.max'), String(limits.pids));
    }
  } catch (err) {
    for (const d of dirs.reverse()) await fs.rmdir(d).catch(() => {});
    if (err instanceof CgroupUnavailableError) throw err;
    const e = err as NodeJS.ErrnoException;
    throw new CgroupUnavailableError(
      `${e.code ?? 'error'} creating ${name} under ${Object.values(layout.parents).join(', ')}`,
    );
  }
  const procsFiles = dirs.map((d) => path.join(d, 'cgroup.procs'));
  const memDir = dirs[0];
  return {
    procsFiles,
    async oomKills() {
      const file = layout.version === 2 ? 'memory.events' : 'memory.oom_control';
      const text = await fs.readFile(path.join(memDir, file), 'utf8').catch(() => '');
      return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
    },
    async close() {
      for (const d of dirs) {
        for (let i = 0; i < 50; i++) {
          if (layout.version === 2) await write(path.join(d, 'cgroup.kill'), '1').catch(() => {});
          const pids = (await fs.readFile(path.join(d, 'cgroup.procs'), 'utf8').catch(() => ''))
            .split('\n')
            .filter(Boolean)
            .map(Number);
          for (const pid of pids) {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              /* gone */
            }
          }
          const removed = await fs.rmdir(d).then(
            () => true,
            (e: NodeJS.ErrnoException) => e.code === 'ENOENT',
          );
          if (removed) break;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    },
  };
}

/**
 * argv that joins the job's cgroups, then execs `argv` (the host's sh; the pid is written before the sandbox
 * starts, so everything the command forks is counted from the first instruction on).
 */
export function joinCgroupArgv(procsFiles: string[], argv: string[]): string[] {
  const script = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"';
  return ['/bin/sh', '-c', script, 'frognano-cgroup', String(procsFiles.length), ...procsFiles, ...argv];
}
