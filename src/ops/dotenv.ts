import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';

/**
 * Puts the variables of a `.env` file into `env`, leaving those already set alone: the real environment wins.
 * Probot reads `.env` itself, but only once `run()` starts, after modules that read a setting when they are
 * imported (the logger and LOG_LEVEL); entry points call this first so `.env` applies to those too.
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
