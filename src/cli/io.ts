/** Where a command writes and what it reads from its surroundings; injectable so commands are testable in-process. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}

export function writeLine(stream: NodeJS.WritableStream, text = ''): void {
  stream.write(`${text}\n`);
}
