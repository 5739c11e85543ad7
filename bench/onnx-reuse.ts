/**
 * Prefix reuse of the onnx backend on the real-architecture Qwen3.5 fixture (test/fixtures/qwen35-tiny: linear
 * attention whose state cannot be rewound, and the official chat template, which drops earlier `<think>` blocks
 * once a new user message arrives). Prints reused vs prefilled prompt tokens for
 *   1. a tool loop (every turn after the first),
 *   2. a user follow-up in the same conversation (the first turn after it), then more tool turns,
 *   3. a follow-up job: a new conversation with the same system prompt and tools (how review rounds start),
 * before (the cache as it was: end-of-prompt and end-of-generation states only) and after (plus the pinned
 * checkpoints at the first and the last user turn, and the follow-up state prefilled while the backend is idle
 * after a turn without tool calls; the bench waits for it, as a reviewer's reply comes minutes later).
 *
 * Usage: npx tsx bench/onnx-reuse.ts [--turns 6] [--model-dir test/fixtures/qwen35-tiny]
 */
import path from 'node:path';
import { OnnxBackend } from '../src/inference/onnx/backend.js';
import type { ChatMessage, GenerateResult, ToolSpec } from '../src/inference/types.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : dflt;
};
const turns = Number(opt('turns', '6'));
const modelDir = path.resolve(opt('model-dir', 'test/fixtures/qwen35-tiny'));

const TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'Read',
      description: 'Reads a file from the local filesystem.',
      parameters: {
        type: 'object',
        properties: { file_path: { type: 'string', description: 'The absolute path to the file to read' } },
        required: ['file_path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Bash',
      description: 'Executes a given bash command.',
      parameters: {
        type: 'object',
        properties: { command: { type: 'string', description: 'The command to execute' } },
        required: ['command'],
      },
    },
  },
];
const SYSTEM: ChatMessage = {
  role: 'system',
  content: 'You are a software engineering agent working in a checked-out repository.',
};
const TASK: ChatMessage = { role: 'user', content: 'Make the tests pass. The parser rejects empty strings.' };
const FEEDBACK = 'Review: please also handle whitespace-only input, and add a test for it in parse.test.ts.';

const toolOutput = (turn: number) =>
  Array.from(
    { length: 20 },
    (_, i) => `${i + 1}\texport function step${turn}_${i}(value: string): number { return Number(value) * ${i}; }`,
  ).join('\n');

interface Tally {
  prompt: number;
  reused: number;
}
const add = (t: Tally, r: GenerateResult) => {
  t.prompt += r.promptTokens;
  t.reused += r.promptTokens - r.prefillTokens;
};

/** One generation, then the tool call and its result appended, as the Leaf loop does. */
async function toolTurn(b: OnnxBackend, messages: ChatMessage[], turn: number): Promise<GenerateResult> {
  const r = await b.generate(messages, TOOLS, { maxNewTokens: 16, temperature: 0 });
  messages.push(
    {
      role: 'assistant',
      content: '',
      reasoning: r.message.reasoning ?? r.rawText,
      tool_calls: [{ id: `c${turn}`, name: 'Read', arguments: { file_path: `/repo/src/part${turn}.ts` } }],
    },
    { role: 'tool', content: toolOutput(turn), tool_call_id: `c${turn}`, name: 'Read' },
  );
  return r;
}

async function run(pinnedCheckpoints: boolean, waitForIdle: boolean) {
  const b = await OnnxBackend.load(modelDir, { pinnedCheckpoints });
  try {
    const loop: Tally = { prompt: 0, reused: 0 };
    const followUp: Tally = { prompt: 0, reused: 0 };
    const afterFollowUp: Tally = { prompt: 0, reused: 0 };
    const job: Tally = { prompt: 0, reused: 0 };
    const messages: ChatMessage[] = [SYSTEM, TASK];
    for (let turn = 0; turn < turns; turn++) {
      const r = await toolTurn(b, messages, turn);
      if (turn > 0) add(loop, r);
    }
    // The run ends with an answer; a reviewer replies in the same conversation.
    const final = await b.generate(messages, TOOLS, { maxNewTokens: 16, temperature: 0 });
    add(loop, final);
    messages.push({
      role: 'assistant',
      content: 'The parser now accepts empty strings.',
      reasoning: final.message.reasoning ?? final.rawText,
    });
    messages.push({ role: 'user', content: FEEDBACK });
    if (waitForIdle) await b.whenIdle();
    const idle = b.cachedStates().find((s) => s.pin === 'followup')?.tokens ?? 0;
    for (let turn = turns; turn < turns + 3; turn++) {
      const r = await toolTurn(b, messages, turn);
      add(turn === turns ? followUp : afterFollowUp, r);
    }
    // A follow-up job (issue 13): a new conversation, the original task plus the review feedback.
    const r = await b.generate([SYSTEM, { role: 'user', content: `${TASK.content}\n\n${FEEDBACK}` }], TOOLS, {
      maxNewTokens: 16,
      temperature: 0,
    });
    add(job, r);
    return { loop, followUp, afterFollowUp, job, idle };
  } finally {
    await b.close();
  }
}

const pct = (t: Tally) =>
  `${t.reused}/${t.prompt} reused (${((100 * t.reused) / t.prompt).toFixed(1)}%), ${t.prompt - t.reused} prefilled`;

const before = await run(false, true);
const after = await run(true, true);
const rushed = await run(true, false);
console.log(
  `model: ${modelDir} (Qwen3.5 architecture, official chat template), ${turns} tool turns before the follow-up`,
);
const rows: [string, 'loop' | 'followUp' | 'afterFollowUp' | 'job'][] = [
  ['tool loop (turns 2..n + answer)', 'loop'],
  ['user follow-up (first turn after it)', 'followUp'],
  ['tool turns after the follow-up', 'afterFollowUp'],
  ['follow-up job (new conversation)', 'job'],
];
for (const [label, key] of rows) {
  console.log(`${label}:`);
  console.log(`  before: ${pct(before[key])}`);
  console.log(`  after : ${pct(after[key])}`);
  if (key === 'followUp') console.log(`  after, follow-up sent at once (no idle time): ${pct(rushed[key])}`);
}
console.log(
  `state prefilled while idle after the answer (the follow-up's head): before ${before.idle} tokens, after ${after.idle} tokens`,
);
