import { execFileSync } from 'node:child_process';

/**
 * Builds `tag` from `base` with one command run as root (say, removing a tool to test what the bot says when an
 * image lacks it); the sandbox user `agent` stays the image's user. Built from stdin: no context, no network needed.
 */
export function buildDerivedImage(base: string, tag: string, rootCommand: string): void {
  execFileSync('docker', ['build', '-q', '-t', tag, '-'], {
    input: `FROM ${base}\nUSER root\nRUN ${rootCommand}\nUSER agent\n`,
    env: { ...process.env, DOCKER_BUILDKIT: '0' },
    stdio: ['pipe', 'ignore', 'ignore'],
  });
}
