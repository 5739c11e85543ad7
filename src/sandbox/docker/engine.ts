import Docker from 'dockerode';

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

/** What dockerode's errors carry. */
export interface DockerError {
  statusCode?: number;
  code?: string;
  message?: string;
  json?: { message?: string };
}

export function engineUnreachable(e: DockerError): boolean {
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

export function isGone(e: DockerError): boolean {
  // 404: no such container; 409: removal already in progress (AutoRemove racing us).
  return e.statusCode === 404 || e.statusCode === 409;
}

/** Removes a container (killing everything in it) and waits until the engine has really removed it. */
export async function removeContainer(container: Docker.Container): Promise<void> {
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
