import { readdirSync, readFileSync } from 'node:fs';
import Docker from 'dockerode';

export const TEST_IMAGE = process.env.FROGNANO_TEST_SANDBOX_IMAGE ?? 'frognano-sandbox:test';

/**
 * Whether the real Docker engine and the test image are here. In CI (CI=true, or FROGNANO_REQUIRE_DOCKER=1 which
 * .ci/run sets) their absence is a failure, never a silent skip; elsewhere the docker tests are skipped with a
 * visible message.
 */
export async function dockerForTests(): Promise<Docker | undefined> {
  const docker = new Docker();
  let why: string | undefined;
  try {
    await docker.ping();
    await docker.getImage(TEST_IMAGE).inspect();
  } catch (err) {
    why = (err as { statusCode?: number }).statusCode === 404
      ? `image ${TEST_IMAGE} not found (build it: scripts/build-sandbox-image.sh ${TEST_IMAGE})`
      : `Docker engine not reachable: ${(err as Error).message}`;
  }
  if (!why) return docker;
  if (process.env.CI === 'true' || process.env.FROGNANO_REQUIRE_DOCKER === '1') throw new Error(`docker sandbox tests need Docker in CI: ${why}`);
  console.warn(`SKIPPING docker sandbox tests: ${why}`);
  return undefined;
}

/** Host pids whose command line contains `needle` (sandboxed processes share the host's kernel, so they show here). */
export function hostPidsMatching(needle: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmd.includes(needle)) pids.push(Number(name));
    } catch {
      /* exited meanwhile */
    }
  }
  return pids;
}

export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}
