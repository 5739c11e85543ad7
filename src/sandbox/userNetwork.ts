import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { runProcess } from './process.js';

/**
 * The network of a bwrap setup command that opted in (`setup.network`): a network namespace of its own, connected
 * to the outside by slirp4netns (a user-mode TCP/IP stack: the command's connections become ordinary sockets of
 * the runner), with `--disable-host-loopback` so the runner's loopback services (Redis, metrics, a model server)
 * are out of reach, and `prohibit` routes for the private, shared and link-local ranges (other hosts of the
 * runner's network, cloud metadata at 169.254.169.254). The command holds no capability in that namespace, so it
 * cannot remove the routes. Services the host binds on a public address of its own stay reachable, as from docker's
 * bridge.
 */

/** Ranges a setup command gets no route to (the operator may narrow them: FROGNANO_SETUP_NETWORK_BLOCKED). */
export const SETUP_NETWORK_BLOCKED = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '169.254.0.0/16',
];
/** slirp4netns's DNS forwarder, inside its default 10.0.2.0/24 (which stays routed: more specific than 10/8). */
export const SLIRP_NAMESERVER = '10.0.2.3';
/** bwrap's --info-fd and --block-fd: the pipes runProcess opens after stdin, stdout and stderr. */
export const INFO_FD = 3;
export const BLOCK_FD = 4;

const START_TIMEOUT_MS = 15_000;

export interface UserNetworkOptions {
  slirp4netnsPath: string;
  blocked: string[];
}

export interface UserNetwork {
  /** Why the command ran without network (it then has only its own loopback). */
  failure?: string;
  /** Ends slirp4netns (once the command is done). */
  stop(): void;
}

/** All of a stream, or what came before the time ran out. */
function readAll(stream: Readable, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const done = () => {
      clearTimeout(timer);
      resolve(text);
    };
    const timer = setTimeout(done, timeoutMs);
    stream.on('data', (c: Buffer) => (text += c.toString('utf8')));
    stream.on('end', done);
    stream.on('error', done);
  });
}

/** Starts slirp4netns on the namespace; resolves once its tap device is there. */
function startSlirp(pid: number, opts: UserNetworkOptions): Promise<ChildProcess> {
  const slirp = spawn(
    opts.slirp4netnsPath,
    [
      // No --configure: it would also bring up `lo`, racing bwrap's own loopback set-up; linkCommands does it.
      '--mtu=65520',
      '--disable-host-loopback',
      '--enable-sandbox',
      '--enable-seccomp',
      `--ready-fd=${INFO_FD}`,
      `--exit-fd=${BLOCK_FD}`,
      '--netns-type=path',
      `/proc/${pid}/ns/net`,
      'tap0',
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } },
  );
  return new Promise((resolve, reject) => {
    let stderr = '';
    const fail = (why: string) => {
      clearTimeout(timer);
      slirp.kill('SIGKILL');
      reject(new Error(why));
    };
    const timer = setTimeout(
      () => fail(`slirp4netns did not start within ${START_TIMEOUT_MS / 1000}s`),
      START_TIMEOUT_MS,
    );
    slirp.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-500)));
    slirp.on('error', (e) =>
      fail(`cannot run ${opts.slirp4netnsPath}: ${e.message} (install the slirp4netns package)`),
    );
    slirp.on('exit', (code) => fail(`slirp4netns exited (${code}): ${stderr.trim()}`));
    (slirp.stdio[INFO_FD] as Readable).once('data', () => {
      clearTimeout(timer);
      slirp.removeAllListeners('exit');
      resolve(slirp);
    });
  });
}

/** slirp4netns's defaults: the guest's address in 10.0.2.0/24, the gateway, the link's MTU. */
function linkCommands(blocked: string[]): string {
  return (
    [
      'link set tap0 mtu 65520',
      'addr add 10.0.2.100/24 dev tap0',
      'link set tap0 up',
      'route add default via 10.0.2.2 dev tap0',
      ...blocked.map((cidr) => `route add prohibit ${cidr}`),
    ].join('\n') + '\n'
  );
}

/** The link and the prohibit routes, set from outside (the runner is root; the command has no capability there). */
async function configureLink(pid: number, blocked: string[]): Promise<void> {
  const r = await runProcess(['nsenter', `--net=/proc/${pid}/ns/net`, 'ip', '-batch', '-'], {
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    stdin: linkCommands(blocked),
    timeoutMs: START_TIMEOUT_MS,
  });
  if (r.exitCode !== 0) {
    throw new Error(`cannot configure the link and blocked routes (nsenter/ip exit ${r.exitCode}): ${r.stderr.trim()}`);
  }
}

/**
 * Connects the network namespace of a bwrap started with `--info-fd 3 --block-fd 4` (its pipes `info` and
 * `block`), then lets the command start. Any failure leaves the command without network (told in `failure`):
 * never with a network that lacks the blocked routes.
 */
export async function connectUserNetwork(
  info: Readable | null,
  block: Writable | null,
  opts: UserNetworkOptions,
): Promise<UserNetwork> {
  block?.on('error', () => undefined); // bwrap may be gone already (killed, cancelled)
  let slirp: ChildProcess | undefined;
  const stop = () => {
    (slirp?.stdio[BLOCK_FD] as Writable | undefined)?.destroy();
    slirp?.kill('SIGKILL');
  };
  let failure: string | undefined;
  try {
    if (!info || !block) throw new Error('bwrap did not start');
    const pid = Number(
      (JSON.parse((await readAll(info, START_TIMEOUT_MS)) || '{}') as Record<string, unknown>)['child-pid'],
    );
    if (!Number.isInteger(pid) || pid <= 0) throw new Error('bwrap did not report its namespace');
    slirp = await startSlirp(pid, opts);
    await configureLink(pid, opts.blocked);
  } catch (err) {
    stop();
    failure = (err as Error).message;
  }
  block?.end('1');
  return { failure, stop };
}
