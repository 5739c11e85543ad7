import { readFileSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { registriesAllow, type EgressPolicy } from './allowlist.js';
import type { AddressCheck } from './addresses.js';
import { EgressProxy, type BlockedRequest, type EgressCaps } from './proxy.js';
import type { ResolveHost } from './resolve.js';

/**
 * Proxy-only egress, the network of a setup command that has any: the sandbox gets no interface but its own
 * loopback, and one way out, a unix socket on which a host-side EgressProxy (one per command) listens. Inside, the
 * forwarder (forward.py) listens on 127.0.0.1:3128 and pipes every connection to the socket; the command's
 * environment names it as the HTTP(S) proxy. Nothing is routable, so the runner host, a bridge gateway, the private
 * ranges and cloud metadata are out of reach by construction; if any part fails to start, the command has no
 * network at all, never an open one (docs/security.md).
 */

/** Where the socket's directory appears inside every sandbox (read-only). */
export const EGRESS_DIR_INSIDE = '/run/frognano-egress';
export const EGRESS_SOCKET_INSIDE = `${EGRESS_DIR_INSIDE}/proxy.sock`;
/** The forwarder's address on the sandbox's loopback. */
export const EGRESS_PROXY_URL = 'http://127.0.0.1:3128';

/**
 * What a setup command with network may reach: the policy (the repository's under the fleet's ceiling), and, for
 * tests only, a resolver and address check standing in for DNS and the blocked ranges.
 */
export interface EgressGrant {
  policy: EgressPolicy;
  resolve?: ResolveHost;
  check?: AddressCheck;
  caps?: Partial<EgressCaps>;
  /** Where the socket's directory is made (default: the system's temporary directory). */
  socketParent?: string;
}

/** `network: true` (no policy given) is what `setup.network: true` means: the registries. */
export function egressGrant(network: boolean | EgressGrant | undefined): EgressGrant | undefined {
  if (!network) return undefined;
  return network === true ? { policy: { mode: 'registries', allow: registriesAllow() } } : network;
}

/** The proxy variables pip, npm, curl, git, cargo and most HTTP clients honour, both spellings. */
export function proxyEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']) {
    env[name] = EGRESS_PROXY_URL;
    env[name.toLowerCase()] = EGRESS_PROXY_URL;
  }
  // The forwarder is on loopback: a NO_PROXY from elsewhere must not send requests around it (they would fail).
  env.NO_PROXY = '';
  env.no_proxy = '';
  return env;
}

let forwarder: string | undefined;
/** argv that runs `inner` under the forwarder (python3 in isolated mode: no PYTHON* variable or user site). */
export function forwardedArgv(inner: string[]): string[] {
  forwarder ??= readFileSync(new URL('./forward.py', import.meta.url), 'utf8');
  return ['python3', '-I', '-c', forwarder, EGRESS_SOCKET_INSIDE, ...inner];
}

/** One command's proxy: the host directory to mount at EGRESS_DIR_INSIDE, and its end (with what it refused). */
export interface EgressSession {
  hostDir: string;
  /** Stops the proxy, removes the directory; the refused requests. Safe to call twice. */
  close(): Promise<BlockedRequest[]>;
}

/** Starts a proxy for one command on a socket in a fresh directory the sandbox user can enter (but not write). */
export async function openEgress(grant: EgressGrant): Promise<EgressSession> {
  const hostDir = await fs.mkdtemp(path.join(grant.socketParent ?? os.tmpdir(), 'frognano-egress-'));
  const proxy = new EgressProxy(grant);
  let closed: Promise<BlockedRequest[]> | undefined;
  const close = () =>
    (closed ??= (async () => {
      await proxy.close().catch(() => undefined);
      await fs.rm(hostDir, { recursive: true, force: true });
      return proxy.blocked();
    })());
  try {
    const socket = path.join(hostDir, 'proxy.sock');
    await proxy.listen(socket);
    // The sandbox user (another uid on a root runner) must connect: that takes write permission on the socket.
    await fs.chmod(socket, 0o666);
    await fs.chmod(hostDir, 0o755);
  } catch (err) {
    await close();
    throw err;
  }
  return { hostDir, close };
}

/** The note a setup command's output gets when its egress could not be set up (checkSandbox looks for it). */
export const NO_NETWORK_NOTE = 'sandbox: this setup command ran without network: ';

/**
 * Runs one command with its own egress proxy: `run` gets the socket directory to mount (undefined when the proxy
 * could not start: the command then runs with no network at all, and says why), and the result gets the refused
 * requests.
 */
export async function runWithEgress<R extends { stderr: string }>(
  grant: EgressGrant,
  run: (egressDir: string | undefined) => Promise<R>,
): Promise<R & { blocked?: BlockedRequest[] }> {
  let egress: EgressSession;
  try {
    egress = await openEgress(grant);
  } catch (err) {
    const r = await run(undefined);
    const note = `${NO_NETWORK_NOTE}${(err as Error).message}`;
    return { ...r, stderr: r.stderr ? `${r.stderr.replace(/\n?$/, '\n')}${note}` : note };
  }
  const r = await run(egress.hostDir).catch(async (err: unknown) => {
    await egress.close();
    throw err;
  });
  return { ...r, blocked: await egress.close() };
}
