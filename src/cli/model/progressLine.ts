/** Download progress on stderr: a redrawn line on a terminal, a line per 10% step elsewhere (logs, CI). */
import type { HubFile } from './hubFiles.js';
import type { ProgressFn } from './download.js';

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

export function progressPrinter(stream: NodeJS.WritableStream & { isTTY?: boolean }, intervalMs = 500): ProgressFn {
  let lastAt = 0;
  let lastStep = -1;
  let lastFile: HubFile | undefined;
  return (file, done) => {
    const pct = file.size > 0 ? Math.floor((done / file.size) * 100) : 100;
    const line = `  ${file.path}  ${String(pct).padStart(3)}%  ${formatBytes(done)} / ${formatBytes(file.size)}`;
    if (file !== lastFile) {
      lastFile = file;
      lastStep = -1;
      lastAt = 0;
    }
    if (stream.isTTY) {
      const now = Date.now();
      if (now - lastAt < intervalMs && done < file.size) return;
      lastAt = now;
      stream.write(`\r${line}\x1b[K${done >= file.size ? '\n' : ''}`);
      return;
    }
    const step = Math.floor(pct / 10);
    if (step === lastStep) return;
    lastStep = step;
    stream.write(`${line}\n`);
  };
}
