import type { BlockedRequest } from '../sandbox/egress/index.js';
import type { ExecOptions, Sandbox } from '../sandbox/types.js';
import { redact } from '../util/redact.js';
import type { LeafEvent } from './events.js';
import { tail } from './text.js';

/**
 * The bot's own commands in a sandbox (set-up, tests), run in the clean shell the model cannot shape
 * (ExecOptions.clean). One place for the model's round (solve.ts) and every later measurement of a change.
 */

/** How much of a setup/test command's output is kept (the end, where failures are reported). */
export const COMMAND_OUTPUT_TAIL_CHARS = 4_000;

export interface CommandResult {
  command: string;
  /** null when the command was killed (timeout, cancel). */
  exitCode: number | null;
  timedOut: boolean;
  /** Last COMMAND_OUTPUT_TAIL_CHARS of stdout then stderr, secrets scrubbed. */
  outputTail: string;
  durationMs: number;
  /** A setup command with network: the requests the egress proxy refused (absent without network). */
  blocked?: BlockedRequest[];
}

/** A refused request of a setup command, with the command that made it (for the status comment and the PR). */
export interface BlockedSetupRequest extends BlockedRequest {
  command: string;
}

/** Every setup command's refused requests, in order, each with its command. */
export function blockedSetupRequests(results: CommandResult[]): BlockedSetupRequest[] {
  return results.flatMap((r) => (r.blocked ?? []).map((b) => ({ ...b, command: r.command })));
}

export interface BotCommandOptions {
  timeoutMs: number;
  emit?: (e: LeafEvent) => void;
  signal?: AbortSignal;
  /**
   * Set-up commands of a repository with `setup.network` only (what its egress proxy admits: the repository's
   * policy under the fleet's ceiling); tests never have network.
   */
  network?: ExecOptions['network'];
}

export async function runBotCommand(
  sandbox: Sandbox,
  phase: 'setup' | 'test',
  command: string,
  o: BotCommandOptions,
): Promise<CommandResult> {
  const { timeoutMs, signal, network = false } = o;
  const emit = o.emit ?? (() => undefined);
  emit({ type: 'command_start', phase, command });
  // A clean shell: nothing the model left in HOME or /tmp (a ~/.bash_profile, a PATH shim) changes what runs.
  const r = await sandbox.exec(command, { timeoutMs, signal, maxOutputBytes: 1024 * 1024, network, clean: true });
  emit({ type: 'command_end', phase, command, exitCode: r.exitCode, timedOut: r.timedOut, durationMs: r.durationMs });
  const output = [r.stdout, r.stderr].filter((s) => s.trim()).join('\n');
  return {
    command,
    exitCode: r.exitCode,
    timedOut: r.timedOut,
    outputTail: redact(tail(output, COMMAND_OUTPUT_TAIL_CHARS)),
    durationMs: r.durationMs,
    ...(r.blocked ? { blocked: r.blocked } : {}),
  };
}

function describeFailure(kind: string, r: CommandResult): string {
  const status = r.timedOut ? 'timed out' : `failed with exit code ${r.exitCode ?? 'unknown'}`;
  return `Note: the ${kind} command \`${r.command}\` ${status}. Last output:\n${tail(r.outputTail, 1_500)}`;
}

/**
 * The set-up commands in order, each run even after one failed (as before the model); `notes` tell the model what
 * failed.
 */
export async function runSetupCommands(
  sandbox: Sandbox,
  commands: string[],
  o: BotCommandOptions,
): Promise<{ results: CommandResult[]; notes: string[] }> {
  const results: CommandResult[] = [];
  const notes: string[] = [];
  for (const command of commands) {
    if (o.signal?.aborted) break;
    const r = await runBotCommand(sandbox, 'setup', command, o);
    results.push(r);
    if (r.exitCode !== 0) notes.push(describeFailure('setup', r));
  }
  return { results, notes };
}
