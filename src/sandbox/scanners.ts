import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectDir } from '../util/packageInfo.js';

/**
 * Where the verification scanners' bundles are inside every sandbox (issue #26): the image copies them there
 * (runner/sandbox.Dockerfile); bwrap binds the host's `runner/scanners` there read-only. One path, so the in-sandbox
 * scanner (src/verify/scans/scanner.py) never asks which sandbox it is in.
 */
export const SCANNERS_DIR_INSIDE = '/opt/frognano/scanners';

/** The ESLint security bundle (runner/scanners/eslint, installed by scripts/install-scanners.sh). */
export const ESLINT_BUNDLE_INSIDE = `${SCANNERS_DIR_INSIDE}/eslint`;

/**
 * The host's scanner bundles (`runner/scanners` of this checkout, or of /app in the runner image), or undefined when
 * this installation has none. Found from the project's package.json, never from anything a sandbox wrote.
 */
export function hostScannersDir(): string | undefined {
  const root = projectDir();
  const dir = root && path.join(root, 'runner', 'scanners');
  return dir && existsSync(dir) ? dir : undefined;
}
