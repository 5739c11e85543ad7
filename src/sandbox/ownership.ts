import { promises as fs } from 'node:fs';
import { runProcess } from './process.js';
import { baseEnv } from './local.js';

/**
 * Who the sandboxed commands run as, and what that means for the workspace on the host.
 *
 * Commands never run as root. A non-root runner maps its own uid into the sandbox: workspace files stay owned by the
 * runner on both sides and nothing is changed. A root runner (the usual container deployment) runs commands as the
 * configured uid (1000 by default), so the workspace is chowned to that uid for the sandbox's life (the Leaf tools
 * write as that uid too, from inside the sandbox), and close() gives the tree back to its original owner, so
 * host-side git (which refuses repositories owned by someone else) and cleanup keep working afterwards.
 * JobWorkspace (jobWorkspace.ts) is the one caller.
 */
export interface WorkspaceOwner {
  uid: number;
  gid: number;
  /** The owner the workspace had before, when it was chowned (restore() gives it back). */
  original?: { uid: number; gid: number };
  /** Gives the workspace back to its owner before the sandbox; idempotent. */
  restore(): Promise<void>;
}

export async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  // chown -R never follows symlinks (-P is its default), so a link in the repository cannot redirect it.
  const r = await runProcess(['chown', '-R', '-P', `${uid}:${gid}`, dir], { env: baseEnv('/tmp'), timeoutMs: 120_000 });
  if (r.exitCode !== 0)
    throw new Error(`could not chown workspace ${dir} to ${uid}:${gid}: ${r.stderr.trim() || 'timed out'}`);
}

export async function claimWorkspace(dir: string, sandboxUser: { uid: number; gid: number }): Promise<WorkspaceOwner> {
  const myUid = process.getuid?.() ?? 0;
  const myGid = process.getgid?.() ?? 0;
  if (myUid !== 0) return { uid: myUid, gid: myGid, restore: async () => {} };
  const st = await fs.stat(dir);
  const { uid, gid } = sandboxUser;
  if (st.uid === uid && st.gid === gid) return { uid, gid, restore: async () => {} };
  await chownTree(dir, uid, gid);
  let restored = false;
  return {
    uid,
    gid,
    original: { uid: st.uid, gid: st.gid },
    restore: async () => {
      if (restored) return;
      restored = true;
      await chownTree(dir, st.uid, st.gid).catch(() => {
        /* the workspace may already be gone */
      });
    },
  };
}
