import { spawn } from 'node:child_process';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type Docker from 'dockerode';
import { IMAGE_REF } from '../queue/schema.js';
import type { Instance } from './instance.js';

/** SWE-bench's image naming: `{id}` is the instance id with `__` as `_1776_`, lower-cased (Docker wants lower case). */
export const DEFAULT_IMAGE_TEMPLATE = 'swebench/sweb.eval.x86_64.{id}:latest';
/** Where SWE-bench images hold the repository, installed into their environment against this path. */
export const TESTBED = '/testbed';
/** SWE-bench's eval scripts activate the environment so; a login of the model's shell does the same. */
export const DEFAULT_ACTIVATION = 'source /opt/miniconda3/bin/activate && conda activate testbed';
/** The repository copied out of an image may be at most this large. */
export const MAX_TESTBED_BYTES = 16 * 1024 ** 3;
const PREFLIGHT_TIMEOUT_MS = 120_000;
const COPY_TIMEOUT_MS = 30 * 60_000;

/** The image of one instance from `--image-template`; a template without `{id}` or giving no valid name is refused. */
export function imageFor(template: string, instanceId: string): string {
  if (!template.includes('{id}')) throw new Error(`--image-template must contain {id}, got '${template}'`);
  const image = template.replaceAll('{id}', instanceId.replace(/__/g, '_1776_').toLowerCase());
  if (!IMAGE_REF.test(image)) throw new Error(`--image-template gives '${image}', not a Docker image name`);
  return image;
}

/**
 * What the bot's sandbox needs from an instance image, checked in a throw-away container before the run (no network,
 * nothing mounted): bash for the exec wrapper and the model's shell, python3 on the sandbox's PATH for the Leaf tools
 * and the container's init, /usr/bin/git for the patch, the repository at /testbed checked out at the base commit,
 * and the environment activation working. Each missing thing is one line; prints nothing but `ok` when all is there.
 */
const PREFLIGHT_SCRIPT = `export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
[ -x /bin/bash ] || echo "no /bin/bash (the sandbox's shell)"
command -v python3 >/dev/null 2>&1 || echo "no python3 on PATH (the Leaf tools and the sandbox init run on it)"
command -v python3 >/dev/null 2>&1 && { python3 -c 'import sys; sys.exit(sys.version_info < (3, 6))' || echo "python3 is older than 3.6"; }
[ -x /usr/bin/git ] || echo "no /usr/bin/git (the patch is taken with it)"
if [ -d "$1/.git" ]; then
  head=$(/usr/bin/git -c safe.directory='*' -C "$1" rev-parse HEAD 2>/dev/null)
  [ "$head" = "$2" ] || echo "$1 is at \${head:-no commit}, not the instance's base_commit $2"
else echo "no git repository at $1"; fi
if [ -n "$3" ]; then
  out=$(cd "$1" 2>/dev/null; /bin/bash -c "$3" 2>&1) || echo "the environment activation failed: $(printf '%s' "$out" | tail -n 1)"
fi
echo ok`;

async function runToEnd(docker: Docker, image: string, cmd: string[], timeoutMs: number): Promise<string> {
  const container = await docker.createContainer({
    Image: image,
    Entrypoint: [],
    Cmd: cmd,
    User: '0:0',
    NetworkDisabled: true,
    Env: ['LANG=C.UTF-8'],
    HostConfig: { NetworkMode: 'none', Memory: 1024 ** 3, PidsLimit: 256 },
  });
  try {
    await container.start();
    const timer = setTimeout(() => void container.kill().catch(() => undefined), timeoutMs);
    await container.wait().finally(() => clearTimeout(timer));
    const logs = await container.logs({ stdout: true, stderr: true, follow: false });
    // Non-TTY logs are multiplexed: 8-byte frame headers before each chunk.
    const out: Buffer[] = [];
    for (let i = 0; i + 8 <= logs.length;) {
      const size = logs.readUInt32BE(i + 4);
      out.push(logs.subarray(i + 8, i + 8 + size));
      i += 8 + size;
    }
    return Buffer.concat(out).toString('utf8').slice(-20_000);
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}

/** Why this instance cannot run in its image (empty: it can). The image must be there already. */
export async function preflight(
  docker: Docker,
  image: string,
  instance: Instance,
  activation: string,
): Promise<string[]> {
  try {
    await docker.getImage(image).inspect();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404)
      return [`image ${image} is not here (docker pull ${image})`];
    return [`cannot inspect image ${image}: ${(err as Error).message}`];
  }
  const argv = ['/bin/sh', '-c', PREFLIGHT_SCRIPT, 'preflight', TESTBED, instance.base_commit, activation];
  let out: string;
  try {
    out = await runToEnd(docker, image, argv, PREFLIGHT_TIMEOUT_MS);
  } catch (err) {
    return [`cannot run a container of ${image}: ${(err as Error).message}`];
  }
  const lines = out
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.at(-1) !== 'ok') return [...lines.slice(-5), 'the preflight check did not finish (no /bin/sh?)'];
  return lines.slice(0, -1).slice(0, 10);
}

/**
 * Copies the image's /testbed (repository, build products and all) to `dest`/testbed on the host: the workspace the
 * run mounts back at /testbed. Through the engine's archive API into `tar -x` (no owners kept; GNU tar refuses
 * members that climb out with `..`), capped at MAX_TESTBED_BYTES and COPY_TIMEOUT_MS.
 */
export async function copyTestbed(docker: Docker, image: string, dest: string): Promise<string> {
  const container = await docker.createContainer({ Image: image, Entrypoint: [], Cmd: ['/bin/true'] });
  try {
    const archive = (await container.getArchive({ path: TESTBED })) as NodeJS.ReadableStream;
    const tar = spawn('tar', ['-x', '-C', dest, '--no-same-owner'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    tar.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
    let bytes = 0;
    const cap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        done(
          bytes > MAX_TESTBED_BYTES ? new Error(`${TESTBED} is larger than ${MAX_TESTBED_BYTES} bytes`) : null,
          chunk,
        );
      },
    });
    const exited = new Promise<number | null>((resolve) => tar.on('close', resolve));
    const timer = setTimeout(() => tar.kill('SIGKILL'), COPY_TIMEOUT_MS);
    try {
      await pipeline(archive, cap, tar.stdin);
      const code = await exited;
      if (code !== 0) throw new Error(`tar exited ${code}: ${stderr.trim()}`);
    } finally {
      clearTimeout(timer);
      tar.kill('SIGKILL');
    }
    return `${dest}/testbed`;
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}
