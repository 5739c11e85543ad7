/** Helpers for the deployment tests: the repository root, YAML documents, and a small Dockerfile reader. */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export const read = (rel: string): string => readFileSync(path.join(ROOT, rel), 'utf8');

/** Every document of every YAML file in a directory, parsed strictly (a syntax error or warning fails the test). */
export function loadYamlDir(rel: string): { file: string; doc: any }[] {
  const out: { file: string; doc: any }[] = [];
  for (const file of readdirSync(path.join(ROOT, rel))
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    for (const d of parseAllDocuments(read(path.join(rel, file)), { strict: true, prettyErrors: true })) {
      if (d.errors.length) throw new Error(`${rel}/${file}: ${d.errors.map((e) => e.message).join('; ')}`);
      if (d.warnings.length) throw new Error(`${rel}/${file}: ${d.warnings.map((e) => e.message).join('; ')}`);
      const doc = d.toJS();
      if (doc !== null && doc !== undefined) out.push({ file, doc });
    }
  }
  return out;
}

export interface Instruction {
  /** Upper-case keyword: FROM, RUN, COPY ... */
  op: string;
  args: string;
  line: number;
}

export interface Stage {
  name: string | undefined;
  /** Image or earlier stage this one starts from (build args substituted from their defaults). */
  from: string;
  instructions: Instruction[];
}

/** Splits a Dockerfile into stages of instructions (joins `\` continuations, drops comments). */
export function parseDockerfile(text: string): { args: Record<string, string>; stages: Stage[] } {
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i + 1;
    let line = lines[i];
    if (/^\s*(#|$)/.test(line)) continue;
    let continued = /\\\s*$/.test(line);
    while (continued && i + 1 < lines.length) {
      line = line.replace(/\\\s*$/, ' ');
      i++;
      if (/^\s*#/.test(lines[i])) continue; // a comment inside a continued instruction is dropped, the instruction goes on
      line += lines[i];
      continued = /\\\s*$/.test(line);
    }
    const m = /^\s*([A-Za-z]+)\s+([\s\S]*)$/.exec(line);
    if (!m) throw new Error(`Dockerfile line ${start}: cannot read "${line}"`);
    const op = m[1].toUpperCase();
    const rest = m[2].trim();
    if (op === 'FROM') {
      const f = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      if (!f) throw new Error(`Dockerfile line ${start}: bad FROM`);
      const from = f[1].replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a: string, b: string) => args[a ?? b] ?? '');
      stages.push({ name: f[2], from, instructions: [] });
    } else if (op === 'ARG' && stages.length === 0) {
      const a = /^(\w+)(?:=(.*))?$/.exec(rest);
      if (a) args[a[1]] = a[2] ?? '';
    } else {
      if (stages.length === 0) throw new Error(`Dockerfile line ${start}: ${op} before FROM`);
      stages[stages.length - 1].instructions.push({ op, args: rest, line: start });
    }
  }
  return { args, stages };
}

/** FROGNANO_* and REDIS_URL names mentioned in the TypeScript sources (how the code reads its settings). */
export function envNamesReadByCode(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.ts'))
        for (const m of read(rel).matchAll(/\b(FROGNANO_[A-Z0-9_]+|REDIS_URL)\b|\benv\.([A-Z][A-Z0-9_]*[A-Z0-9])\b/g))
          names.add(m[1] ?? m[2]!);
    }
  };
  for (const d of ['src', 'runner']) walk(d);
  return names;
}
