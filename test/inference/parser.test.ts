import { convertParamValue, parseAssistantOutput, splitReasoning } from '../../src/inference/toolCallParser.js';
import type { JsonSchema, ToolSpec } from '../../src/inference/types.js';

/** The Leaf tools' parameter shapes (names and types as the model was trained on). */
const TOOLS: ToolSpec[] = [
  tool('Read', { file_path: { type: 'string' }, offset: { type: 'integer' }, limit: { type: 'integer' } }),
  tool('Write', { file_path: { type: 'string' }, content: { type: 'string' } }),
  tool('Edit', {
    file_path: { type: 'string' },
    old_string: { type: 'string' },
    new_string: { type: 'string' },
    replace_all: { type: 'boolean' },
  }),
  tool('Glob', { pattern: { type: 'string' }, path: { type: 'string' } }),
  tool('Bash', { command: { type: 'string' }, description: { type: 'string' }, timeout: { type: 'number' } }),
  tool('Configure', { options: { type: 'object' }, paths: { type: 'array' }, level: { type: ['integer', 'null'] } }),
];

function tool(name: string, properties: Record<string, JsonSchema>): ToolSpec {
  return { type: 'function', function: { name, description: name, parameters: { type: 'object', properties } } };
}

function xmlCall(name: string, params: Record<string, string>): string {
  const body = Object.entries(params)
    .map(([k, v]) => `<parameter=${k}>\n${v}\n</parameter>\n`)
    .join('');
  return `<tool_call>\n<function=${name}>\n${body}</function>\n</tool_call>`;
}

const parse = (raw: string, extra: Parameters<typeof parseAssistantOutput>[1] = {}) =>
  parseAssistantOutput(raw, { idPrefix: 't1', tools: TOOLS, ...extra });

describe('parseAssistantOutput: qwen3_coder XML', () => {
  test('a typical Qwen3.5 turn: reasoning, a sentence, one Read call', () => {
    const raw =
      '<think>\nThe bug is probably in the parser. Let me look at it.\n</think>\n\n' +
      'I will read the parser first.\n' +
      '<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/parser.ts\n</parameter>\n' +
      '<parameter=offset>\n40\n</parameter>\n<parameter=limit>\n80\n</parameter>\n</function>\n</tool_call>';
    const out = parse(raw);
    expect(out.errors).toEqual([]);
    expect(out.reasoning).toBe('The bug is probably in the parser. Let me look at it.');
    expect(out.content).toBe('I will read the parser first.');
    expect(out.toolCalls).toEqual([
      { id: 'call_t1_0', name: 'Read', arguments: { file_path: 'src/parser.ts', offset: 40, limit: 80 } },
    ]);
  });

  test('keeps code verbatim: indentation, blank lines, < > and closing XML tags inside values', () => {
    const code = [
      'export function clamp(x: number, lo: number, hi: number): number {',
      '  if (x < lo) return lo;',
      '',
      '  return x > hi ? hi : x; // a<b>c',
      '}',
      'const html = `<div class="a"><p>hi</p></div>`;',
      '  ',
    ].join('\n');
    const out = parse(xmlCall('Write', { file_path: 'src/clamp.ts', content: code }));
    expect(out.errors).toEqual([]);
    expect(out.toolCalls[0]!.arguments).toEqual({ file_path: 'src/clamp.ts', content: code });
  });

  test('only ONE leading and ONE trailing newline are stripped from a value', () => {
    const out = parse(xmlCall('Write', { file_path: 'a.txt', content: '\n\ntwo blank lines above and below\n\n' }));
    expect(out.toolCalls[0]!.arguments.content).toBe('\n\ntwo blank lines above and below\n\n');
  });

  test('values written inline without newlines are taken as they are', () => {
    const out = parse('<tool_call><function=Glob><parameter=pattern>**/*.ts</parameter></function></tool_call>');
    expect(out.toolCalls[0]!.arguments).toEqual({ pattern: '**/*.ts' });
  });

  test('a value containing </parameter> that is not followed by a tag stays in the value', () => {
    const tricky = 'the parser sees </parameter> here\nand goes on';
    const out = parse(xmlCall('Edit', { file_path: 'NOTES.md', old_string: tricky, new_string: 'x' }));
    expect(out.errors).toEqual([]);
    expect(out.toolCalls[0]!.arguments).toEqual({ file_path: 'NOTES.md', old_string: tricky, new_string: 'x' });
  });

  test('empty values, nested quotes and backslashes', () => {
    const newString = `print("it's \\"quoted\\"", '\\n')`;
    const raw =
      '<tool_call>\n<function=Edit>\n<parameter=file_path>\napp.py\n</parameter>\n' +
      '<parameter=old_string>\n</parameter>\n' +
      `<parameter=new_string>\n${newString}\n</parameter>\n</function>\n</tool_call>`;
    const out = parse(raw);
    expect(out.errors).toEqual([]);
    expect(out.toolCalls[0]!.arguments).toEqual({ file_path: 'app.py', old_string: '', new_string: newString });
  });

  test('converts booleans and numbers by schema; strings that look like numbers stay strings', () => {
    const raw =
      xmlCall('Edit', { file_path: '42', old_string: 'true', new_string: '007', replace_all: 'True' }) +
      xmlCall('Bash', { command: 'sleep 1', timeout: '2.5' });
    const out = parse(raw);
    expect(out.toolCalls.map((c) => c.arguments)).toEqual([
      { file_path: '42', old_string: 'true', new_string: '007', replace_all: true },
      { command: 'sleep 1', timeout: 2.5 },
    ]);
  });

  test('objects and arrays are parsed as JSON; null for nullable non-string types', () => {
    const raw = xmlCall('Configure', { options: '{"a": [1, 2], "b": "x"}', paths: '["src", "test"]', level: 'null' });
    expect(parse(raw).toolCalls[0]!.arguments).toEqual({
      options: { a: [1, 2], b: 'x' },
      paths: ['src', 'test'],
      level: null,
    });
  });

  test('values that do not fit their type stay strings so the tool can reject them', () => {
    const raw = xmlCall('Read', { file_path: 'a', offset: 'ten' }) + xmlCall('Configure', { options: '{not json' });
    const out = parse(raw);
    expect(out.errors).toEqual([]);
    expect(out.toolCalls.map((c) => c.arguments)).toEqual([
      { file_path: 'a', offset: 'ten' },
      { options: '{not json' },
    ]);
  });

  test('without tools every value is a string', () => {
    const out = parseAssistantOutput(xmlCall('Read', { file_path: 'a', offset: '3' }), { idPrefix: 'x' });
    expect(out.toolCalls[0]!.arguments).toEqual({ file_path: 'a', offset: '3' });
  });

  test('parallel calls get numbered ids; text between and after goes to content', () => {
    const raw =
      'Looking at both files.\n' +
      xmlCall('Read', { file_path: 'a.ts' }) +
      '\n' +
      xmlCall('Read', { file_path: 'b.ts' }) +
      '\nThen I will decide.';
    const out = parseAssistantOutput(raw, { idPrefix: 'turn7', tools: TOOLS });
    expect(out.toolCalls.map((c) => [c.id, c.arguments.file_path])).toEqual([
      ['call_turn7_0', 'a.ts'],
      ['call_turn7_1', 'b.ts'],
    ]);
    expect(out.content).toBe('Looking at both files.\n\n\nThen I will decide.');
  });

  test('two functions packed in one <tool_call> block', () => {
    const raw =
      '<tool_call>\n<function=Glob>\n<parameter=pattern>\n*.md\n</parameter>\n</function>\n' +
      '<function=Bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>';
    expect(parse(raw).toolCalls.map((c) => c.name)).toEqual(['Glob', 'Bash']);
  });

  test('default ids are unique per parse', () => {
    const raw = xmlCall('Bash', { command: 'ls' });
    const a = parseAssistantOutput(raw).toolCalls[0]!.id;
    const b = parseAssistantOutput(raw).toolCalls[0]!.id;
    expect(a).toMatch(/^call_[0-9a-f]{8}_0$/);
    expect(a).not.toBe(b);
  });
});

describe('parseAssistantOutput: tolerated slips', () => {
  test('missing </tool_call> at the end of generation (stop string ate it)', () => {
    const out = parse('<tool_call>\n<function=Bash>\n<parameter=command>\nnpm test\n</parameter>\n</function>\n');
    expect(out.errors).toEqual([]);
    expect(out.toolCalls[0]!.arguments).toEqual({ command: 'npm test' });
  });

  test('missing </function> and </tool_call> after a closed parameter', () => {
    const out = parse('<tool_call>\n<function=Bash>\n<parameter=command>\nnpm test\n</parameter>\n');
    expect(out.errors).toEqual([]);
    expect(out.toolCalls[0]!.arguments).toEqual({ command: 'npm test' });
  });

  test('missing </parameter> before </function> and before the next <parameter=', () => {
    const raw =
      '<tool_call>\n<function=Edit>\n<parameter=file_path>\nsrc/x.ts\n' +
      '<parameter=old_string>\nfoo\n</parameter>\n<parameter=new_string>\nbar\n</function>\n</tool_call>';
    const out = parse(raw);
    expect(out.errors).toEqual([]);
    expect(out.toolCalls[0]!.arguments).toEqual({ file_path: 'src/x.ts', old_string: 'foo', new_string: 'bar' });
  });

  test('missing </tool_call> before a second call', () => {
    const raw =
      '<tool_call>\n<function=Read>\n<parameter=file_path>\na\n</parameter>\n</function>\n' +
      xmlCall('Read', { file_path: 'b' });
    const out = parse(raw);
    expect(out.errors).toEqual([]);
    expect(out.toolCalls.map((c) => c.arguments.file_path)).toEqual(['a', 'b']);
  });

  test('text after a call without </tool_call> is content, not an error', () => {
    const out = parse(
      '<tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>\n</function>\nRunning it now.',
    );
    expect(out.errors).toEqual([]);
    expect(out.toolCalls).toHaveLength(1);
    expect(out.content).toBe('Running it now.');
  });

  test('bare <function=...> blocks without any <tool_call> wrapper (vLLM fallback)', () => {
    const out = parse('Checking.\n<function=Bash>\n<parameter=command>\ngit status\n</parameter>\n</function>');
    expect(out.errors).toEqual([]);
    expect(out.toolCalls[0]!.arguments).toEqual({ command: 'git status' });
    expect(out.content).toBe('Checking.');
  });

  test('trailing end-of-turn tokens left by the server are dropped', () => {
    const out = parse('All done: the tests pass.<|im_end|>\n');
    expect(out).toEqual({ content: 'All done: the tests pass.', toolCalls: [], errors: [] });
  });

  test('spaces around function and parameter names', () => {
    const out = parse(
      '<tool_call>\n<function= Read >\n<parameter= file_path >\nx\n</parameter>\n</function>\n</tool_call>',
    );
    expect(out.toolCalls[0]).toMatchObject({ name: 'Read', arguments: { file_path: 'x' } });
  });
});

describe('parseAssistantOutput: malformed calls become errors for the model', () => {
  test('junk inside <tool_call> is reported with its number; other calls survive', () => {
    const raw =
      xmlCall('Read', { file_path: 'a' }) +
      '\n<tool_call>\nplease run ls\n</tool_call>\n' +
      xmlCall('Read', { file_path: 'b' });
    const out = parse(raw);
    expect(out.toolCalls.map((c) => c.arguments.file_path)).toEqual(['a', 'b']);
    expect(out.errors).toHaveLength(1);
    expect(out.errors[0]).toMatch(
      /^Malformed tool call #2: missing <function=\.\.\.> after <tool_call>; found "please run ls"/,
    );
    expect(out.content).toBe('');
  });

  test('output cut off inside a parameter value: nothing is run, the error says why', () => {
    const out = parse(
      '<tool_call>\n<function=Write>\n<parameter=file_path>\nbig.py\n</parameter>\n<parameter=content>\nimport os\ndef ma',
    );
    expect(out.toolCalls).toEqual([]);
    expect(out.errors).toEqual([
      'Malformed tool call #1: the output ended inside parameter "content" of Write (no </parameter>); the call was not run. ' +
        'If the value is long, split the work into smaller calls.',
    ]);
  });

  test('function name not closed with ">"', () => {
    const out = parse('<tool_call>\n<function=Read\n<parameter=file_path>\na\n</parameter>\n</function>\n</tool_call>');
    expect(out.toolCalls).toEqual([]);
    expect(out.errors).toEqual(['Malformed tool call #1: missing ">" after <function=Read.']);
  });

  test('invalid function and parameter names', () => {
    expect(parse('<tool_call><function=rm -rf></function></tool_call>').errors[0]).toBe(
      'Malformed tool call #1: invalid function name "rm -rf".',
    );
    expect(parse('<tool_call><function=Read><parameter=file path>a</parameter></function></tool_call>').errors[0]).toBe(
      'Malformed tool call #1: invalid parameter name "file path" in Read.',
    );
  });

  test('text between parameters', () => {
    const raw = '<tool_call>\n<function=Read>\nfile: <parameter=file_path>\na\n</parameter>\n</function>\n</tool_call>';
    expect(parse(raw).errors).toEqual(['Malformed tool call #1: unexpected text inside <function=Read>: "file:".']);
  });

  test('junk after </parameter> that would otherwise be swallowed silently', () => {
    const raw = '<tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>\noops\n</function>\n</tool_call>';
    const out = parse(raw);
    expect(out.toolCalls).toEqual([]);
    expect(out.errors).toEqual(['Malformed tool call #1: unexpected text after </parameter> of "command" in Bash.']);
  });

  test('duplicate parameter', () => {
    const raw =
      '<tool_call><function=Read><parameter=file_path>a</parameter><parameter=file_path>b</parameter></function></tool_call>';
    expect(parse(raw).errors).toEqual(['Malformed tool call #1: parameter "file_path" given twice in Read.']);
  });

  test('empty <tool_call> block', () => {
    expect(parse('<tool_call>\n</tool_call>').errors).toEqual([
      'Malformed tool call #1: empty <tool_call> block (no function given).',
    ]);
  });

  test('after a bad block the parser resumes after its </tool_call>, not inside it', () => {
    const raw =
      '<tool_call>\n<function=Bad Name>\n<parameter=x>\n<function=Bash> inside\n</parameter>\n</function>\n</tool_call>\n' +
      xmlCall('Bash', { command: 'ls' });
    const out = parse(raw);
    expect(out.errors).toEqual(['Malformed tool call #1: invalid function name "Bad Name".']);
    expect(out.toolCalls.map((c) => c.arguments)).toEqual([{ command: 'ls' }]);
    expect(out.content).toBe('');
  });

  test('a bad block without </tool_call> does not swallow the next call', () => {
    const out = parse('<tool_call>\nrun the tests\n' + xmlCall('Bash', { command: 'npm test' }));
    expect(out.errors).toHaveLength(1);
    expect(out.toolCalls.map((c) => [c.id, c.arguments])).toEqual([['call_t1_0', { command: 'npm test' }]]);
  });
});

describe('parseAssistantOutput: Hermes JSON', () => {
  test('one call with typed arguments', () => {
    const out = parse(
      '<tool_call>\n{"name": "Edit", "arguments": {"file_path": "a.ts", "old_string": "}", "new_string": "};\\n", "replace_all": false}}\n</tool_call>',
    );
    expect(out.errors).toEqual([]);
    expect(out.toolCalls).toEqual([
      {
        id: 'call_t1_0',
        name: 'Edit',
        arguments: { file_path: 'a.ts', old_string: '}', new_string: '};\n', replace_all: false },
      },
    ]);
  });

  test('braces and </tool_call> inside JSON strings do not end the object', () => {
    const content = 'fn main() { println!("{}", "</tool_call>"); }';
    const out = parse(
      `<tool_call>\n${JSON.stringify({ name: 'Write', arguments: { file_path: 'main.rs', content } })}\n</tool_call>`,
    );
    expect(out.errors).toEqual([]);
    expect(out.toolCalls[0]!.arguments).toEqual({ file_path: 'main.rs', content });
  });

  test('double-encoded arguments string and "parameters" key are accepted', () => {
    const a = parse('<tool_call>{"name": "Bash", "arguments": "{\\"command\\": \\"ls\\"}"}</tool_call>');
    const b = parse('<tool_call>{"name": "Bash", "parameters": {"command": "pwd"}}</tool_call>');
    expect(a.toolCalls[0]!.arguments).toEqual({ command: 'ls' });
    expect(b.toolCalls[0]!.arguments).toEqual({ command: 'pwd' });
  });

  test('invalid JSON is an error naming the problem', () => {
    const out = parse('<tool_call>\n{"name": "Bash", "arguments": {"command": \'ls\'}}\n</tool_call>\nafter');
    expect(out.toolCalls).toEqual([]);
    expect(out.errors).toHaveLength(1);
    expect(out.errors[0]).toMatch(/^Malformed tool call #1: invalid JSON inside <tool_call> \(.+\)\.$/);
    expect(out.content).toBe('after');
  });

  test('unclosed JSON, missing name, non-object arguments', () => {
    expect(parse('<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"').errors).toEqual([
      'Malformed tool call #1: the JSON object inside <tool_call> is never closed (output cut off?).',
    ]);
    expect(parse('<tool_call>{"arguments": {}}</tool_call>').errors).toEqual([
      'Malformed tool call #1: the JSON inside <tool_call> needs a "name" string naming the tool.',
    ]);
    expect(parse('<tool_call>{"name": "Bash", "arguments": ["ls"]}</tool_call>').errors).toEqual([
      'Malformed tool call #1: "arguments" of Bash must be a JSON object.',
    ]);
  });

  test('mixed XML and JSON calls in one turn', () => {
    const raw =
      xmlCall('Read', { file_path: 'a' }) +
      '\n<tool_call>\n{"name": "Read", "arguments": {"file_path": "b"}}\n</tool_call>';
    expect(parse(raw).toolCalls.map((c) => [c.id, c.arguments.file_path])).toEqual([
      ['call_t1_0', 'a'],
      ['call_t1_1', 'b'],
    ]);
  });
});

describe('reasoning', () => {
  test('tool-call markup inside <think> is never a call', () => {
    const raw =
      '<think>\nMaybe <tool_call><function=Bash><parameter=command>rm -rf /</parameter></function></tool_call>? No.\n</think>\nNo changes needed.';
    const out = parse(raw);
    expect(out.toolCalls).toEqual([]);
    expect(out.errors).toEqual([]);
    expect(out.reasoning).toContain('rm -rf /');
    expect(out.content).toBe('No changes needed.');
  });

  test('template-opened think: the output starts inside reasoning and has only </think>', () => {
    const raw = 'I should list files first.\n</think>\n\n' + xmlCall('Glob', { pattern: '**/*.py' });
    const out = parse(raw);
    expect(out.reasoning).toBe('I should list files first.');
    expect(out.toolCalls[0]!.arguments).toEqual({ pattern: '**/*.py' });
    expect(out.content).toBe('');
  });

  test('startsInThinking: generation cut off while still thinking is all reasoning', () => {
    const out = parse('Let me think about <tool_call> formats...', { startsInThinking: true });
    expect(out).toEqual({
      content: '',
      reasoning: 'Let me think about <tool_call> formats...',
      toolCalls: [],
      errors: [],
    });
  });

  test('unclosed leading <think> is all reasoning', () => {
    expect(parse('<think>\nstill thinking <function=Bash>').toolCalls).toEqual([]);
    expect(parse('<think>\nstill thinking').reasoning).toBe('still thinking');
  });

  test('empty think block (non-thinking mode) gives no reasoning field', () => {
    const out = parse('<think>\n\n</think>\n\nDone.');
    expect(out).toEqual({ content: 'Done.', toolCalls: [], errors: [] });
  });

  test('a </think> inside a Write after a tool call is file content, not reasoning', () => {
    const content = 'model output: <think>x</think> answer';
    const out = parse(xmlCall('Write', { file_path: 'fixture.txt', content }));
    expect(out.reasoning).toBeUndefined();
    expect(out.toolCalls[0]!.arguments.content).toBe(content);
  });

  test('splitReasoning leaves plain text alone', () => {
    expect(splitReasoning('just an answer', false)).toEqual({ rest: 'just an answer' });
  });
});

describe('convertParamValue', () => {
  test.each([
    [{ type: 'integer' }, ' 12 ', 12],
    [{ type: 'integer' }, '-3', -3],
    [{ type: 'integer' }, '1.5', '1.5'],
    [{ type: 'number' }, '1e3', 1000],
    [{ type: 'number' }, '', ''],
    [{ type: 'boolean' }, 'FALSE', false],
    [{ type: 'boolean' }, 'yes', 'yes'],
    [{ type: 'array' }, '{"a":1}', '{"a":1}'],
    [{ type: 'object' }, '[1]', '[1]'],
    [{ type: 'string' }, 'null', 'null'],
    [{ type: ['string', 'null'] }, 'null', 'null'],
    [{ type: 'integer' }, 'null', null],
    [{}, '5', '5'],
    [undefined, 'true', 'true'],
  ])('%j %j -> %j', (schema, value, expected) => {
    expect(convertParamValue(value, schema)).toEqual(expected);
  });
});

describe('robustness', () => {
  // Deterministic pseudo-random soup of the tags and characters that matter, to show the parser
  // never throws and never returns a call with an invalid name, whatever the model writes.
  const PIECES = [
    '<tool_call>',
    '</tool_call>',
    '<function=Read>',
    '<function=',
    '</function>',
    '<parameter=file_path>',
    '<parameter=',
    '</parameter>',
    '<think>',
    '</think>',
    '{"name": "Bash", "arguments": {"command": "ls"}}',
    '{',
    '}',
    '"',
    '\n',
    ' ',
    'x',
    '>',
    '<',
    'src/a.ts',
    '<|im_end|>',
  ];
  test('random tag soup never throws', () => {
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 3000; i++) {
      let raw = '';
      const n = 1 + Math.floor(rand() * 40);
      for (let j = 0; j < n; j++) raw += PIECES[Math.floor(rand() * PIECES.length)];
      const out = parseAssistantOutput(raw, { idPrefix: 'f', tools: TOOLS });
      for (const c of out.toolCalls) expect(c.name).toMatch(/^[A-Za-z_][A-Za-z0-9_.-]*$/);
      for (const e of out.errors) expect(e).toMatch(/^Malformed tool call(s: \d+ more not listed\.$| #\d+: )/);
    }
  });
});

describe('caps', () => {
  test('a flood of malformed calls is summarised after ten errors', () => {
    const out = parse('<tool_call>\nnope\n</tool_call>\n'.repeat(25));
    expect(out.errors).toHaveLength(11);
    expect(out.errors[9]).toMatch(/^Malformed tool call #10: /);
    expect(out.errors[10]).toBe('Malformed tool calls: 15 more not listed.');
  });

  test('an unclosed JSON object ends the scan (the rest of the output is inside it)', () => {
    const out = parse(
      '<tool_call>{"name": "Write", "arguments": {"content": "x <tool_call>{"name": "Bash"}</tool_call>',
    );
    expect(out.toolCalls).toEqual([]);
    expect(out.errors).toHaveLength(1);
  });
});
