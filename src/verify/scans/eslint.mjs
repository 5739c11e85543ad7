// The in-sandbox ESLint half of the verification scans (src/verify/scans/index.ts, run by scanner.py). Plain Node
// (>= 18.18, what ESLint 9 needs), run with `node --input-type=module -e` in a fresh sandbox without network.
// stdin:  {"bundleDir", "rules": {ruleId: severity}, "files": [{"path", "text"}]}
// stdout: one JSON object {"results": [{"path", "messages": [{"rule", "line", "message"}], "fatal"?}]}
//
// Why the Linter class and not the ESLint class: Linter lints text only, it never looks at the filesystem, so the
// repository's eslint.config.*, .eslintrc*, .eslintignore and package.json cannot change what is checked (they are
// hostile: a patch could add one that turns every rule off). Inline configuration is off as well
// (`allowInlineConfig: false`, `noInlineConfig`): `/* eslint-disable */` and `// eslint-disable-line` silence nothing.
// The texts come from scanner.py, which read them with its own bounds; this script opens no file of the repository.
import { createRequire } from 'node:module';

const MAX_MESSAGE = 300;
const TS = /\.(?:ts|mts|cts|tsx)$/;
// Explicit patterns: flat config counts a file as configured only when a `files` pattern names its extension.
const FILES = ['js', 'mjs', 'cjs', 'jsx', 'ts', 'mts', 'cts', 'tsx'].map((ext) => `**/*.${ext}`);

function fail(reason) {
  process.stdout.write(JSON.stringify({ error: reason }) + '\n');
  process.exit(3);
}

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 18 || (major === 18 && minor < 18))
  fail(`node ${process.versions.node} is too old for ESLint 9 (>= 18.18)`);

const req = await readStdin();
let bundle;
try {
  bundle = createRequire(`${req.bundleDir}/package.json`);
} catch {
  fail('the eslint bundle is not installed in the sandbox');
}
const load = (name) => {
  try {
    return bundle(name);
  } catch {
    fail(`the eslint bundle lacks ${name}`);
  }
};
const { Linter } = load('eslint');
const security = load('eslint-plugin-security');
const rules = Object.fromEntries(Object.keys(req.rules).map((r) => [r, 'error']));
// The TypeScript parser (and typescript itself, the bulk of the load time) only when a TypeScript file is linted.
let tsParser;

function config(file, sourceType) {
  const ts = TS.test(file);
  if (ts) tsParser ??= load('@typescript-eslint/parser');
  return [
    {
      files: FILES,
      plugins: { security },
      linterOptions: { noInlineConfig: true, reportUnusedDisableDirectives: 'off' },
      languageOptions: {
        ecmaVersion: 'latest',
        sourceType,
        globals: GLOBALS,
        ...(ts
          ? { parser: tsParser, parserOptions: { ecmaFeatures: { jsx: file.endsWith('x') } } }
          : { parserOptions: { ecmaFeatures: { jsx: true } } }),
      },
      rules,
    },
  ];
}

// The globals the rules look for (no-eval, no-implied-eval and no-new-func only report a name that resolves to the
// global one); a file that declares its own `eval` or `setTimeout` shadows them as it should.
const GLOBALS = Object.fromEntries(
  [
    'eval',
    'Function',
    'setTimeout',
    'setInterval',
    'setImmediate',
    'execScript',
    'globalThis',
    'global',
    'window',
    'self',
    'require',
    'module',
    'exports',
    'process',
    'Buffer',
  ].map((g) => [g, 'readonly']),
);

const linter = new Linter({ configType: 'flat', cwd: '/' });

function lint(file, text) {
  const filename = `/workspace/${file}`;
  const opts = { filename, allowInlineConfig: false };
  // A module first (import/export, top-level await), then a CommonJS script (with, octal literals): the same order
  // on the base and the patch, so a file is read the same way on both sides.
  let messages = linter.verify(text, config(file, 'module'), opts);
  if (messages.some((m) => m.fatal) && !file.endsWith('.mjs'))
    messages = linter.verify(text, config(file, 'commonjs'), opts);
  // A message without a rule is a parse error or "no matching configuration": the file was not checked.
  const fatal = messages.find((m) => m.fatal || !m.ruleId);
  if (fatal) return { path: file, messages: [], fatal: `line ${fatal.line}: ${fatal.message}`.slice(0, MAX_MESSAGE) };
  return {
    path: file,
    messages: messages
      .filter((m) => m.ruleId && m.ruleId in req.rules)
      .map((m) => ({ rule: m.ruleId, line: m.line, message: String(m.message).slice(0, MAX_MESSAGE) })),
  };
}

const results = req.files.map((f) => lint(f.path, f.text));
process.stdout.write(JSON.stringify({ results }) + '\n');
