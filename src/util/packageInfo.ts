import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PackageInfo {
  name: string;
  version: string;
  engines?: { node?: string };
}

let cached: PackageInfo | undefined;
let cachedDir: string | undefined;

/**
 * The project's package.json, found by walking up from this file, so it works both from src/ (tsx)
 * and from the compiled dist/src/.
 */
export function packageInfo(): PackageInfo {
  if (!cached) find();
  return cached!;
}

/**
 * The project's root directory (where its package.json is): the checkout, or /app in the images. Packaged files that
 * are not compiled (runner/scanners, the sandbox's read-only scanner bundles) are found from here. undefined when
 * no package.json of this project is above this file.
 */
export function projectDir(): string | undefined {
  if (!cached) find();
  return cachedDir;
}

function find(): void {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'package.json');
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as PackageInfo;
      if (pkg.name === 'frognano-bot') {
        cached = pkg;
        cachedDir = dir;
        return;
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) {
      cached = { name: 'frognano-bot', version: '0.0.0' };
      return;
    }
    dir = parent;
  }
}
