import { Writable, type Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { CappedBuffer } from '../process.js';
import { isGone, type DockerError } from './engine.js';

/** A Writable that feeds a CappedBuffer (the exec stream is demultiplexed into two of them). */
export function sink(buf: CappedBuffer): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      buf.push(chunk);
      cb();
    },
  });
}

/** A Writable that passes at most `count`'s cap bytes on to `to` (binary stdout) and counts the rest. */
export function cappedSink(to: Writable, count: CappedBuffer): Writable {
  let room = count.cap;
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      const part = chunk.length > room ? chunk.subarray(0, Math.max(0, room)) : chunk;
      room -= part.length;
      count.dropped += chunk.length - part.length;
      if (part.length === 0 || to.write(part)) cb();
      else to.once('drain', () => cb());
    },
  });
}

/**
 * The exit status of a finished exec, or null when the engine does not know it. The engine can close the stream a
 * moment before it records the exit code: poll briefly, then less often.
 */
export async function execExitCode(exec: Docker.Exec): Promise<number | null> {
  for (let i = 0; i < 60; i++) {
    const info = await exec.inspect().catch(() => null);
    if (!info) return null;
    if (!info.Running && typeof info.ExitCode === 'number') return info.ExitCode;
    await new Promise((r) => setTimeout(r, i < 20 ? 5 : 25));
  }
  return null;
}

export function waitForEnd(stream: Duplex): Promise<void> {
  return new Promise((resolve) => {
    const done = () => resolve();
    stream.once('end', done);
    stream.once('close', done);
    stream.once('error', done);
  });
}

/**
 * Runs argv as root in the container (the sweep, the workspace measurement: not queued behind commands), with
 * stdout captured up to 64 KiB; 'gone' when the container no longer exists.
 */
export async function rootExec(
  docker: Docker,
  container: Docker.Container,
  argv: string[],
  timeoutMs: number,
): Promise<{ exitCode: number | null; stdout: string } | 'gone'> {
  try {
    const k = await container.exec({ Cmd: argv, User: '0:0', AttachStdout: true, AttachStderr: true });
    const s = (await k.start({})) as Duplex;
    const out = new CappedBuffer(64 * 1024);
    docker.modem.demuxStream(s, sink(out), sink(new CappedBuffer(0)));
    const timer = setTimeout(() => s.destroy(), timeoutMs);
    await waitForEnd(s);
    clearTimeout(timer);
    return { exitCode: await execExitCode(k), stdout: out.text() };
  } catch (err) {
    // Container gone (job limit, closed): its processes are gone too.
    if (isGone(err as DockerError)) return 'gone';
    return { exitCode: null, stdout: '' };
  }
}
