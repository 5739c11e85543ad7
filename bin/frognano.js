#!/usr/bin/env node
// `frognano` command. In a checkout (after `npm ci`) it runs the TypeScript sources through tsx, so it is
// never a stale build that runs; where tsx is absent (a production install without dev dependencies) it runs
// the compiled dist/ from `npm run build`. FROGNANO_USE_DIST=1 forces dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const compiled = `${root}dist/src/cli/main.js`;
const source = `${root}src/cli/main.ts`;

async function entry() {
  if (process.env.FROGNANO_USE_DIST !== '1' && existsSync(source)) {
    try {
      const { register } = await import('tsx/esm/api');
      register();
      return source;
    } catch {
      /* no tsx: fall through to the build */
    }
  }
  if (existsSync(compiled)) return compiled;
  process.stderr.write(
    'frognano: cannot start: install dev dependencies (`npm ci`) to run from source, or build with `npm run build`.\n',
  );
  process.exit(3);
}

const { runMain } = await import(pathToFileURL(await entry()).href);
const code = await runMain(process.argv.slice(2));
// stdout/stderr are synchronous for files and pipes on Linux; exit now so no leftover handle keeps us alive.
process.exit(code);
