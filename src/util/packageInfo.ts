import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PackageInfo {
  name: string;
  version: string;
  engines?: { node?: string };
}

let cached: PackageInfo | undefined;

/**
 * The project's package.json, found by walking up from this file, so it works both from src/ (tsx)
 * and from the compiled dist/src/.
 */
export function packageInfo(): PackageInfo {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'package.json');
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as PackageInfo;
      if (pkg.name === 'frognano-bot') return (cached = pkg);
    }
    const parent = path.dirname(dir);
    if (parent === dir) return (cached = { name: 'frognano-bot', version: '0.0.0' });
    dir = parent;
  }
}
