import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';

/**
 * Puts the variables of a `.env` file into `env`, leaving those already set alone: the real environment wins.
 * The one reader of `.env` for the app, the runner and the CLI (each entry point calls it first, before any module
 * that reads a setting when it is imported, such as the logger and LOG_LEVEL). Probot copies `.env` OVER
 * process.env when run() starts; src/app/server.ts undoes that (keepEnvironment), so this file's rule holds there too.
 * Uses node's own parser, as Probot does, so both read the file alike. Returns the names it set; a missing
 * file sets nothing.
 */
export function loadDotEnv(file: string, env: NodeJS.ProcessEnv = process.env): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return [];
    throw new Error(`cannot read ${file}: ${code ?? (err as Error).message}`);
  }
  const set: string[] = [];
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (value === undefined || env[name] !== undefined) continue;
    env[name] = value;
    set.push(name);
  }
  return set;
}

/**
 * Runs `start` (which may copy a `.env` over `env`, as Probot's run() does synchronously before its first await) and
 * puts back every variable `env` had before: the environment, and what loadDotEnv already took from `.env`, wins.
 */
export function keepEnvironment<T>(start: () => T, env: NodeJS.ProcessEnv = process.env): T {
  const before = { ...env };
  try {
    return start();
  } finally {
    for (const [name, value] of Object.entries(before)) env[name] = value;
  }
}
