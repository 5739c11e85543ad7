import { readFileSync } from 'node:fs';

/**
 * The programs the docker sandbox runs inside its containers, kept as real files beside this module (shipped into
 * dist/ by package.json's build script, like src/leaf/sandboxTool.py) and read once, on first use.
 */
const cache = new Map<string, string>();

function program(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = readFileSync(new URL(`./${name}`, import.meta.url), 'utf8');
    cache.set(name, text);
  }
  return text;
}

/** PID 1 of every container (init.py): reaps, sweeps on SIGUSR1, exits at the job time limit. */
export function initProgram(): string {
  return program('init.py');
}

/** A bash script that kills every process of the sandbox user (sweep.sh's function, then a call of it). */
export function sweepProgram(): string {
  return `${program('sweep.sh')}\nsweep\n`;
}

/** The root wrapper every command runs under (sweep.sh's function, then exec-wrapper.sh). */
export function execWrapperProgram(): string {
  return `${program('sweep.sh')}\n${program('exec-wrapper.sh')}`;
}

/** The exit status of an exec whose sweep failed (processes survived): exec-wrapper.sh's `exit 253`. */
export const SWEEP_FAILED_EXIT = 253;
