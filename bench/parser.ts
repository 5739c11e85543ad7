/**
 * Throughput of parseAssistantOutput on realistic turn sizes (a reasoning block, a sentence and tool
 * calls whose values are code). Prints figures; run with `npx tsx bench/parser.ts`.
 */
import { parseAssistantOutput } from '../src/inference/toolCallParser.js';
import type { ToolSpec } from '../src/inference/types.js';

const tools: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'Write',
      description: 'Write a file',
      parameters: { type: 'object', properties: { file_path: { type: 'string' }, content: { type: 'string' } } },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Read',
      description: 'Read a file',
      parameters: { type: 'object', properties: { file_path: { type: 'string' }, offset: { type: 'integer' } } },
    },
  },
];

function codeOf(chars: number): string {
  const line = '  if (a < b && c > d) { return `<div>${x}</div>`; } // </parameter> in a comment\n';
  return line.repeat(Math.ceil(chars / line.length)).slice(0, chars);
}

function turn(codeChars: number, calls: number): string {
  let out = '<think>\nThe function mishandles the boundary; rewrite it.\n</think>\n\nRewriting the files.\n';
  for (let i = 0; i < calls; i++) {
    out +=
      `<tool_call>\n<function=Write>\n<parameter=file_path>\nsrc/f${i}.ts\n</parameter>\n` +
      `<parameter=content>\n${codeOf(codeChars)}\n</parameter>\n</function>\n</tool_call>\n`;
  }
  return (
    out +
    '<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/a.ts\n</parameter>\n<parameter=offset>\n10\n</parameter>\n</function>\n</tool_call>'
  );
}

const cases: [string, string][] = [
  ['small turn (1 call, 200 B of code)', turn(200, 1)],
  ['typical edit turn (1 call, 4 KB)', turn(4_000, 1)],
  ['max turn (8K tokens, ~30 KB in 3 calls)', turn(10_000, 3)],
  ['parallel calls (20 calls, 1 KB each)', turn(1_000, 20)],
];

for (const [name, text] of cases) {
  const check = parseAssistantOutput(text, { tools, idPrefix: 'b' });
  if (check.errors.length) throw new Error(`${name}: ${check.errors.join('; ')}`);
  const first = check.toolCalls[0]!.arguments.content as string;
  if (!text.includes(`<parameter=content>\n${first}\n</parameter>`))
    throw new Error(`${name}: content not kept verbatim`);
  const iterations = Math.max(50, Math.round(20_000_000 / text.length));
  const start = performance.now();
  for (let i = 0; i < iterations; i++) parseAssistantOutput(text, { tools, idPrefix: 'b' });
  const ms = (performance.now() - start) / iterations;
  const mbps = text.length / 1e6 / (ms / 1000);
  console.log(
    `${name.padEnd(42)} ${String(text.length).padStart(7)} chars  ${ms.toFixed(3)} ms/parse  ${mbps.toFixed(0)} MB/s  ${check.toolCalls.length} calls`,
  );
}
