import { readdirSync, readFileSync } from 'node:fs';
import Docker from 'dockerode';
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** The private, shared and link-local IPv4 ranges: what counts as "not the outside" for the network tests. */
export const PRIVATE_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'];

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
    why =
      (err as { statusCode?: number }).statusCode === 404
        ? `image ${TEST_IMAGE} not found (build it: scripts/build-sandbox-image.sh ${TEST_IMAGE})`
        : `Docker engine not reachable: ${(err as Error).message}`;
  }
  if (!why) return docker;
  if (process.env.CI === 'true' || process.env.FROGNANO_REQUIRE_DOCKER === '1')
    throw new Error(`docker sandbox tests need Docker in CI: ${why}`);
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

/** Whether an IPv4 address lies in a CIDR range. */
export function inCidr(address: string, cidr: string): boolean {
  const toNum = (a: string) => a.split('.').reduce((n, part) => n * 256 + Number(part), 0);
  const [base, bits] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toNum(address) / size) === Math.floor(toNum(base) / size);
}

/** This machine's non-loopback IPv4 addresses (its interfaces, the docker bridge even while it is down). */
function hostAddresses(): string[] {
  const up = Object.values(os.networkInterfaces())
    .flat()
    .filter((i) => i && i.family === 'IPv4' && !i.internal)
    .map((i) => i!.address);
  let listed = '';
  try {
    listed = execFileSync('ip', ['-4', '-o', 'addr', 'show'], { encoding: 'utf8', timeout: 5000 });
  } catch {
    /* no iproute2: the interfaces node sees are enough */
  }
  const all = [...listed.matchAll(/ inet (\d+\.\d+\.\d+\.\d+)\//g)].map((m) => m[1]);
  return [...new Set([...up, ...all])].filter((a) => !a.startsWith('127.'));
}

/**
 * An address of this machine that stands for "the outside" in network tests (never another host): a public-range
 * one when there is one, and the private ranges without the one it lies in.
 */
export function outsideAddress(): { address: string; blockedWithout: string[] } {
  const all = hostAddresses();
  const address = all.find((a) => !PRIVATE_RANGES.some((c) => inCidr(a, c))) ?? all[0];
  if (!address) throw new Error('this machine has no non-loopback IPv4 address for the network tests');
  return { address, blockedWithout: PRIVATE_RANGES.filter((c) => !inCidr(address, c)) };
}

/** An address of this machine in one of the private ranges, if it has one. */
export function privateHostAddress(): string | undefined {
  return hostAddresses().find((a) => PRIVATE_RANGES.some((c) => inCidr(a, c)));
}
