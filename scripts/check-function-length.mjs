#!/usr/bin/env node
// Fails when a function in the product code (src/, runner/) is longer than the limit (default 80 lines):
// the size at which a function is usually two. Part of `npm run lint`.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const limit = Number(process.env.MAX_FUNCTION_LINES ?? 80);
const roots = process.argv.slice(2).length ? process.argv.slice(2) : ['src', 'runner'];

function* files(dir) {
  for (const name of readdirSync(dir)) {
    // Installed packages are not product code (runner/scanners/*/node_modules: the scanners' bundles).
    if (name === 'node_modules') continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) yield* files(p);
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) yield p;
  }
}

function nameOf(node, sf) {
  if (node.name) return node.name.getText(sf);
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(sf);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(sf);
  return '(anonymous)';
}

const long = [];
for (const root of roots) {
  for (const file of files(root)) {
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (ts.isFunctionLike(node) && node.body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        const lines = end - start + 1;
        if (lines > limit) long.push({ where: `${file}:${start + 1}`, name: nameOf(node, sf), lines });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
}
long.sort((a, b) => b.lines - a.lines);
for (const f of long) console.log(`${f.where} ${f.name}: ${f.lines} lines (limit ${limit})`);
if (long.length) {
  console.error(`${long.length} function(s) longer than ${limit} lines`);
  process.exit(1);
}
console.log(`no function longer than ${limit} lines in ${roots.join(', ')}`);
