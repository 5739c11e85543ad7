import type { Sandbox } from '../../../src/sandbox/types.js';
import { FIXTURE, type ToolCase } from './cases.js';

/** What one case produced: the observation text and the workspace files it names (base64; null: absent). */
export interface CaseResult {
  output: string;
  files: Record<string, string | null>;
}

export interface GoldenFile {
  /** How the goldens were made, for whoever records them again. */
  recordedWith: string;
  workdir: string;
  cases: Record<string, CaseResult>;
}

export type CallTool = (tool: string, args: Record<string, unknown>, env: Record<string, string>) => Promise<string>;

/** Cases are written for a sandbox whose workspace is /workspace; another workdir (local) gets them rewritten. */
export function forWorkdir<T>(value: T, workdir: string): T {
  if (workdir === '/workspace') return value;
  return JSON.parse(JSON.stringify(value).split('/workspace').join(workdir)) as T;
}

async function mustExec(sandbox: Sandbox, command: string): Promise<string> {
  const r = await sandbox.exec(command, { timeoutMs: 30_000 });
  if (r.exitCode !== 0) throw new Error(`conformance setup failed (${r.exitCode}): ${command}\n${r.stderr}`);
  return r.stdout;
}

/** Empties the workspace, builds the fixture and the case's setup, makes the call, reads back the files. */
export async function runCase(sandbox: Sandbox, c: ToolCase, callTool: CallTool): Promise<CaseResult> {
  const wd = sandbox.workdir;
  await mustExec(sandbox, `find . -mindepth 1 -maxdepth 1 -exec rm -rf {} + && ${FIXTURE}${c.setup ? ` && ${c.setup}` : ''}`);
  const output = await callTool(c.tool, forWorkdir(c.args, wd), c.env ?? {});
  const files: Record<string, string | null> = {};
  for (const f of c.files ?? []) {
    const out = await mustExec(sandbox, `if [ -f '${f}' ]; then base64 -w0 '${f}'; else printf '%s' '-'; fi`);
    files[f] = out === '-' ? null : out;
  }
  return { output, files };
}
