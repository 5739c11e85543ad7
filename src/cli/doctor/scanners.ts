import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { CLEAN_PATH, hostScannersDir } from '../../sandbox/index.js';
import { check, type CheckResult } from './check.js';

const run = promisify(execFile);
/** What ESLint 9 needs (runner/scanners/eslint/package.json engines). */
const NODE_MIN: [number, number] = [18, 18];

function version(file: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/** The node the bwrap sandbox's clean shell finds (it sees the host's /usr and /bin), and its version. */
async function sandboxNode(dirs = CLEAN_PATH.split(':')): Promise<{ file: string; version?: string } | undefined> {
  const file = dirs.map((d) => path.join(d, 'node')).find((f) => existsSync(f));
  if (!file) return undefined;
  try {
    const { stdout } = await run(file, ['--version'], { timeout: 5000 });
    return { file, version: stdout.trim().replace(/^v/, '') };
  } catch {
    return { file };
  }
}

/**
 * The verification scanners' bundle for the bwrap sandbox (issue #26): runner/scanners/eslint installed at the pinned
 * version, and a node >= 18.18 where the sandbox sees it. Optional: without them the JavaScript/TypeScript security
 * scan reports "not run" with the reason (a docker sandbox has both in its image).
 */
export async function checkScanners(dir = hostScannersDir(), nodeDirs?: string[]): Promise<CheckResult> {
  const name = 'Scanners';
  const bundle = dir && path.join(dir, 'eslint');
  const pinned = bundle && readPinned(bundle);
  const installed = bundle && version(path.join(bundle, 'node_modules', 'eslint', 'package.json'));
  if (!pinned || installed !== pinned) {
    const what = !pinned
      ? 'no runner/scanners/eslint'
      : installed
        ? `ESLint ${installed}, pinned ${pinned}`
        : 'not installed';
    return check.warn(
      name,
      `ESLint bundle: ${what}; the bwrap sandbox's JS/TS security scan will not run`,
      'run scripts/install-scanners.sh',
    );
  }
  const node = await sandboxNode(nodeDirs);
  const [major, minor] = (node?.version ?? '0.0').split('.').map(Number);
  if (!node?.version || major < NODE_MIN[0] || (major === NODE_MIN[0] && minor < NODE_MIN[1]))
    return check.warn(
      name,
      `ESLint ${installed}, but ${node ? `${node.file} is ${node.version ?? 'not runnable'}` : 'no node in /usr or /bin'}: ` +
        "the bwrap sandbox's JS/TS security scan will not run",
      `install Node ${NODE_MIN.join('.')} or newer in /usr (apt-get install nodejs): the sandbox sees the host's /usr`,
    );
  return check.ok(name, `ESLint ${installed} bundle (${bundle}), node v${node.version} for the bwrap sandbox`, false);
}

function readPinned(bundle: string): string | undefined {
  try {
    const pkg = JSON.parse(readFileSync(path.join(bundle, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    return pkg.dependencies?.eslint;
  } catch {
    return undefined;
  }
}
