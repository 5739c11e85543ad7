import { readFileSync, writeFileSync } from 'node:fs';
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

/**
 * Sets `vars` in the `.env` file, as Probot's setup page does with the App's credentials and the webhook channel
 * (server.ts hands this to Probot as its `updateEnv`): a line already there for a name is replaced, the others are
 * appended, comments and every other line stay, and the file ends with a newline, so that the README's
 * `echo NAME=value >> .env` starts a line of its own (Probot's own writer rewrites the file without comments and
 * without a final newline, and the appended line joined the last one). Values are written as Probot writes them
 * (newlines as `\n`; the private key comes already in double quotes). Also sets them in `env`, as Probot's does: its
 * setup reads WEBHOOK_PROXY_URL back from process.env for the manifest.
 */
export function updateDotEnv(
  file: string,
  vars: NodeJS.ProcessEnv,
  env: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  for (const [name, value] of Object.entries(vars)) {
    if (value === undefined) continue;
    const line = `${name}=${value.replace(/\r?\n/g, '\\n')}`;
    const at = lines.findIndex((l) => new RegExp(`^\\s*(export\\s+)?${name}\\s*=`).test(l));
    if (at >= 0) lines[at] = line;
    else lines.push(line);
  }
  writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  Object.assign(env, vars);
  return vars;
}
