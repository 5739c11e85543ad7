import { promises as fs } from 'node:fs';
import os from 'node:os';
import type Docker from 'dockerode';
import { chownTree } from '../ownership.js';
import {
  INSTANCE_ID,
  LABEL_CREATED,
  LABEL_HOST,
  LABEL_INSTANCE,
  LABEL_PID,
  LABEL_WORKSPACE,
  LABEL_WORKSPACE_OWNER,
  SANDBOX_LABEL,
} from './containerSpec.js';
import { removeContainer } from './engine.js';
import { processAlive } from '../../util/processAlive.js';

/**
 * Removes sandbox containers left behind: those older than maxAgeMs, and those made on this host by a runner
 * process that no longer exists (crashed mid-job). Call it when a runner starts. `labels` narrows the search
 * (e.g. to one deployment). Workspaces on this host that were chowned for the sandbox get their owner back.
 * Returns the ids removed.
 */
export async function reapStaleSandboxes(
  docker: Docker,
  maxAgeMs: number,
  opts: { labels?: Record<string, string>; now?: number } = {},
): Promise<string[]> {
  const now = opts.now ?? Date.now();
  const label = [`${SANDBOX_LABEL}=1`, ...Object.entries(opts.labels ?? {}).map(([k, v]) => `${k}=${v}`)];
  const list = await docker.listContainers({ all: true, filters: { label } });
  const removed: string[] = [];
  for (const c of list) {
    const created = Number(c.Labels[LABEL_CREATED]) || c.Created * 1000;
    const pid = Number(c.Labels[LABEL_PID]);
    const fromHere = c.Labels[LABEL_HOST] === os.hostname();
    const ownerGone =
      fromHere && (!processAlive(pid) || (pid === process.pid && c.Labels[LABEL_INSTANCE] !== INSTANCE_ID));
    if (now - created < maxAgeMs && !ownerGone) continue;
    try {
      await removeContainer(docker.getContainer(c.Id));
      removed.push(c.Id);
      const ws = c.Labels[LABEL_WORKSPACE];
      const orig = /^(\d+):(\d+)$/.exec(c.Labels[LABEL_WORKSPACE_OWNER] ?? '');
      if (fromHere && ws && orig && (await fs.stat(ws).catch(() => null))?.isDirectory()) {
        await chownTree(ws, Number(orig[1]), Number(orig[2])).catch(() => {});
      }
    } catch {
      /* another runner reaped it first, or the engine refused: the next start tries again */
    }
  }
  return removed;
}
