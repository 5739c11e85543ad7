import type { Sandbox } from '../sandbox/types.js';
import { isTestFile, type PatchFile } from './diffFiles.js';

/**
 * The third side (as SWE-bench resets test files before grading): the patched code with the BASE's version of
 * every test file the patch touched. Done inside the sandbox: the base's files come back from git, the test files
 * the patch added are removed; the paths (which the model chose) go to the sandbox's git on stdin, never to the host.
 */
export function touchedTestFiles(files: PatchFile[]): { restore: string[]; remove: string[] } {
  const restore = new Set<string>();
  const remove = new Set<string>();
  for (const f of files) {
    if (f.change === 'renamed' && f.oldPath && isTestFile(f.oldPath)) restore.add(f.oldPath);
    if (!isTestFile(f.path)) continue;
    if (f.change === 'added' || f.change === 'renamed') remove.add(f.path);
    else restore.add(f.path);
  }
  return { restore: [...restore], remove: [...remove] };
}

const GIT = "/usr/bin/git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c 'safe.directory=*'";
const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ATTR_NOSYSTEM: '1',
  GIT_LITERAL_PATHSPECS: '1',
};

/** Returns an `afterPatch` for prepareSide that puts the base's test files back. */
export function restoreBaseTests(baseCommit: string, files: { restore: string[]; remove: string[] }) {
  return async (sandbox: Sandbox, signal: AbortSignal): Promise<string | undefined> => {
    const run = (command: string, paths: string[]) =>
      sandbox.exec(command, {
        stdin: paths.join('\0') + '\0',
        clean: true,
        env: GIT_ENV,
        timeoutMs: 60_000,
        signal,
        maxOutputBytes: 64 * 1024,
      });
    if (files.restore.length > 0) {
      const r = await run(`${GIT} checkout ${baseCommit} --pathspec-from-file=- --pathspec-file-nul`, files.restore);
      if (r.exitCode !== 0) return "the base's test files could not be restored on the patched code";
    }
    if (files.remove.length > 0) {
      const r = await run('/usr/bin/xargs -0 -r /bin/rm -f --', files.remove);
      if (r.exitCode !== 0) return "the patch's new test files could not be set aside";
    }
    return undefined;
  };
}
