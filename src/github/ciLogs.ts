import { visibleText } from './untrusted.js';
import type { ChecksOctokit } from './checkRuns.js';

/**
 * The tail of a GitHub Actions job's log, read as a stream: a log can be gigabytes, so only a ring buffer of the last
 * lines (and, apart, the last `##[error]` lines, which may sit far above the tail) is ever held. The log is untrusted
 * input like an issue: timestamps and ANSI codes are stripped, hidden text too (visibleText).
 */
export interface LogLimits {
  maxLines: number;
  maxBytes: number;
  /** `##[error]` lines kept apart from the tail. */
  maxErrorLines: number;
  /** One line longer than this is cut (a minified bundle on one line). */
  maxLineChars: number;
}

export const DEFAULT_LOG_LIMITS: LogLimits = {
  maxLines: 200,
  maxBytes: 16 * 1024,
  maxErrorLines: 20,
  maxLineChars: 1000,
};

export type JobLog =
  | { kind: 'tail'; lines: string[]; errors: string[]; droppedLines: number }
  /** 404/410, or the download link expired: the round goes on with the checks and annotations. */
  | { kind: 'gone'; why: string }
  /** 403: the installation lacks `actions: read`. */
  | { kind: 'refused'; why: string };

const TIMESTAMP = /^\uFEFF?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?/;
// CSI and OSC sequences, then any other escape.
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-_]/g;
const NOISE = /^##\[(?:group|endgroup|debug)\]/;

/** One raw log line as the model sees it, or null for a line that says nothing (group markers, blank). */
export function cleanLogLine(raw: string, maxChars = DEFAULT_LOG_LIMITS.maxLineChars): string | null {
  const line = raw
    .replace(/\r$/, '')
    .replace(TIMESTAMP, '')
    .replace(ANSI, '')
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
  if (NOISE.test(line) || !line.trim()) return null;
  return line.length > maxChars ? `${line.slice(0, maxChars)} [… ${line.length - maxChars} more characters]` : line;
}

/** A fixed-capacity FIFO of lines, bounded in count and bytes. */
class LineRing {
  private lines: string[] = [];
  private bytes = 0;
  dropped = 0;
  constructor(
    private readonly maxLines: number,
    private readonly maxBytes: number,
  ) {}
  push(line: string): void {
    this.lines.push(line);
    this.bytes += Buffer.byteLength(line) + 1;
    while (this.lines.length > this.maxLines || (this.bytes > this.maxBytes && this.lines.length > 1)) {
      this.bytes -= Buffer.byteLength(this.lines.shift()!) + 1;
      this.dropped++;
    }
  }
  toArray(): string[] {
    return [...this.lines];
  }
}

/** Reads a byte stream to its end, keeping only the cleaned tail and the last error lines. */
export async function tailOfLog(
  stream: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  limits: LogLimits = DEFAULT_LOG_LIMITS,
) {
  const tail = new LineRing(limits.maxLines, limits.maxBytes);
  const errors = new LineRing(limits.maxErrorLines, limits.maxBytes / 4);
  const decoder = new TextDecoder();
  let partial = '';
  const take = (raw: string) => {
    const line = cleanLogLine(raw, limits.maxLineChars);
    if (line === null) return;
    tail.push(line);
    if (line.startsWith('##[error]')) errors.push(line);
  };
  for await (const chunk of stream) {
    const text = partial + decoder.decode(chunk, { stream: true });
    const parts = text.split('\n');
    partial = parts.pop() ?? '';
    // A "line" that never ends is cut here so it cannot grow without bound.
    if (partial.length > limits.maxLineChars * 4) partial = partial.slice(0, limits.maxLineChars + 1);
    for (const raw of parts) take(raw);
  }
  take(partial + decoder.decode());
  const lines = visibleText(tail.toArray().join('\n')).split('\n');
  const tailSet = new Set(lines);
  // Error lines already in the tail are not repeated.
  const earlier = errors.toArray().filter((e) => !tailSet.has(e));
  return {
    kind: 'tail' as const,
    lines,
    errors: visibleText(earlier.join('\n')).split('\n').filter(Boolean),
    droppedLines: tail.dropped,
  };
}

function statusOf(e: unknown): number | undefined {
  return typeof e === 'object' && e !== null && 'status' in e ? Number((e as { status: unknown }).status) : undefined;
}

/**
 * `GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs` answers with a redirect to a download link that expires
 * within a minute: it is followed at once, by hand, so the body is streamed rather than buffered by the client.
 */
export async function fetchJobLog(
  octokit: ChecksOctokit,
  o: { owner: string; repo: string; jobId: number; signal?: AbortSignal; limits?: LogLimits },
): Promise<JobLog> {
  let location: string | undefined;
  try {
    const res = (await octokit.request('GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs', {
      owner: o.owner,
      repo: o.repo,
      job_id: o.jobId,
      request: { redirect: 'manual', ...(o.signal ? { signal: o.signal } : {}) },
    })) as { data: unknown; status?: number; headers?: Record<string, string | undefined> };
    location = res.headers?.location;
    if (!location) return { kind: 'gone', why: `GitHub answered ${res.status ?? '?'} without a download link` };
  } catch (e) {
    const status = statusOf(e);
    if (status === 403)
      return {
        kind: 'refused',
        why: 'GitHub refused to give the job log (403): the app needs the `actions: read` permission',
      };
    if (status === 404 || status === 410)
      return { kind: 'gone', why: `the job log is no longer available (${status})` };
    throw e;
  }
  const res = await fetch(location, { signal: o.signal, redirect: 'follow' });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    return { kind: 'gone', why: `the log download link answered ${res.status} (expired or removed)` };
  }
  return tailOfLog(res.body as unknown as AsyncIterable<Uint8Array>, o.limits);
}
