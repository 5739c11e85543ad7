import type { ToolSpec } from '../inference/types.js';

/**
 * The five Leaf tools as FrogNano was trained on them: upstream Leaf's OPENAI_TOOLS
 * (microsoft/FrogNano, frognano/harness/leaf/tools.py). Names, key order, descriptions and parameter
 * descriptions are interface constants: the chat template renders them into every prompt, and any change is a
 * distribution shift for the model. test/leaf/conformance.test.ts renders them through the chat template.
 */
export const TOOL_NAMES = ['Read', 'Write', 'Edit', 'Glob', 'Bash'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

export const LEAF_TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'Read',
      description: 'Read a text file. Returns numbered lines.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'Path to the file to read.' },
          offset: { type: 'integer', description: 'Optional 1-based starting line.' },
          limit: { type: 'integer', description: 'Optional maximum number of lines.' },
        },
        required: ['file_path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Write',
      description: 'Write a complete file, creating parent directories when needed.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'Path to write.' },
          content: { type: 'string', description: 'Full file contents.' },
        },
        required: ['file_path', 'content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Edit',
      description: 'Replace an exact string in a text file.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'Path to edit.' },
          old_string: { type: 'string', description: 'Exact text to replace.' },
          new_string: { type: 'string', description: 'Replacement text.' },
          replace_all: { type: 'boolean', description: 'Replace every occurrence instead of requiring one match.' },
        },
        required: ['file_path', 'old_string', 'new_string'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Glob',
      description: 'Find files by glob pattern.',
      parameters: {
        type: 'object',
        properties: {
          pattern: { type: 'string', description: 'Glob pattern, e.g. **/*.py.' },
          path: { type: 'string', description: 'Optional directory to search from.' },
        },
        required: ['pattern'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Bash',
      description: 'Run a shell command in the repository workdir.',
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'string', description: 'Command to run.' },
          description: { type: 'string', description: 'Short description of the command.' },
          timeout: { type: 'number', description: 'Optional timeout in seconds.' },
        },
        required: ['command'],
      },
    },
  },
];
