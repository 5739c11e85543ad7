/**
 * Tool calls on which this project's Leaf tools must answer exactly as upstream Leaf's tool runner does
 * (microsoft/FrogNano, frognano/harness/leaf/tool_runner.py). Each case starts from a fresh workspace holding
 * FIXTURE, runs its own `setup` in the sandbox, makes one call, then reads back `files`.
 *
 * Paths are written as the bwrap and docker sandboxes see them (`/workspace`); the local sandbox's test
 * substitutes its own directory. Only /workspace persists between commands in every sandbox (bwrap gives each
 * command a fresh /tmp), so outside paths used across commands are system files that read the same everywhere.
 */
export interface ToolCase {
  name: string;
  tool: string;
  args: Record<string, unknown>;
  setup?: string;
  /** Extra environment for the tool runner (upstream's LEAF_* limits). */
  env?: Record<string, string>;
  /** Workspace files whose content after the call is part of the expected result. */
  files?: string[];
}

/** Built in every case's empty workspace before its own setup. */
export const FIXTURE = [
  'mkdir -p src/pkg docs',
  "printf 'line one\\nline two\\nline three\\n' > a.txt",
  "printf 'def f():\\n    return 1\\n\\ndef g():\\n    return 1\\n' > src/pkg/mod.py",
  "printf 'print(1)\\n' > src/main.py",
  "printf 'x\\r\\ny\\r\\nz\\r\\n' > crlf.txt",
  "printf 'alpha\\nbeta\\n' > docs/readme.md",
  "printf '\\000\\001\\377\\376ABC\\n' > bin.dat",
].join(' && ');

export const CASES: ToolCase[] = [
  // ---- Read ----
  { name: 'read_basic', tool: 'Read', args: { file_path: 'a.txt' } },
  { name: 'read_offset_limit', tool: 'Read', args: { file_path: 'a.txt', offset: 2, limit: 1 } },
  { name: 'read_offset_as_string', tool: 'Read', args: { file_path: 'a.txt', offset: '2' } },
  { name: 'read_offset_past_end', tool: 'Read', args: { file_path: 'a.txt', offset: 10 } },
  { name: 'read_offset_negative', tool: 'Read', args: { file_path: 'a.txt', offset: -5, limit: 2 } },
  { name: 'read_limit_zero_means_all', tool: 'Read', args: { file_path: 'a.txt', limit: 0 } },
  { name: 'read_offset_not_integer', tool: 'Read', args: { file_path: 'a.txt', offset: '1.5' } },
  { name: 'read_offset_float', tool: 'Read', args: { file_path: 'a.txt', offset: 2.9 } },
  { name: 'read_offset_empty_string', tool: 'Read', args: { file_path: 'a.txt', offset: '' } },
  { name: 'read_path_alias', tool: 'Read', args: { path: 'a.txt' } },
  { name: 'read_missing_argument', tool: 'Read', args: {} },
  { name: 'read_empty_path', tool: 'Read', args: { file_path: '' } },
  { name: 'read_missing_file', tool: 'Read', args: { file_path: 'nope.txt' } },
  { name: 'read_directory', tool: 'Read', args: { file_path: 'src' } },
  { name: 'read_crlf', tool: 'Read', args: { file_path: 'crlf.txt' } },
  { name: 'read_cr_only', tool: 'Read', args: { file_path: 'cr.txt' }, setup: "printf 'a\\rb\\rc' > cr.txt" },
  { name: 'read_binary', tool: 'Read', args: { file_path: 'bin.dat' } },
  { name: 'read_not_utf8', tool: 'Read', args: { file_path: 'latin1.txt' }, setup: "printf 'caf\\351\\n' > latin1.txt" },
  { name: 'read_other_line_breaks', tool: 'Read', args: { file_path: 'ff.txt' }, setup: "printf 'a\\fb\\vc\\342\\200\\250d\\n' > ff.txt" },
  { name: 'read_absolute_inside', tool: 'Read', args: { file_path: '/workspace/a.txt' } },
  { name: 'read_absolute_outside', tool: 'Read', args: { file_path: '/proc/sys/kernel/ostype' } },
  { name: 'read_symlink_outside', tool: 'Read', args: { file_path: 'link.txt' }, setup: 'ln -s /proc/sys/kernel/ostype link.txt' },
  { name: 'read_dotdot', tool: 'Read', args: { file_path: 'src/../a.txt' } },
  { name: 'read_empty_file', tool: 'Read', args: { file_path: 'empty.txt' }, setup: ': > empty.txt' },
  { name: 'read_no_final_newline', tool: 'Read', args: { file_path: 'nofinal.txt' }, setup: "printf 'one\\ntwo' > nofinal.txt" },
  { name: 'read_number_as_path', tool: 'Read', args: { file_path: 123 } },
  { name: 'read_truncated_by_env', tool: 'Read', args: { file_path: 'a.txt' }, env: { LEAF_TOOL_OUTPUT_CHARS: '20' } },
  { name: 'read_truncated_default', tool: 'Read', args: { file_path: 'big.txt', offset: 10 }, setup: 'seq 1 6000 > big.txt' },
  { name: 'read_dev_null', tool: 'Read', args: { file_path: '/dev/null' } },
  { name: 'read_limit_negative', tool: 'Read', args: { file_path: 'a.txt', offset: 2, limit: -1 } },
  { name: 'read_unicode_path', tool: 'Read', args: { file_path: 'dïr/ünï code.txt' }, setup: "mkdir -p dïr && printf 'ü\\n' > 'dïr/ünï code.txt'" },
  // ---- Write ----
  { name: 'write_new_nested', tool: 'Write', args: { file_path: 'new/dir/f.txt', content: 'hello\nworld\n' }, files: ['new/dir/f.txt'] },
  { name: 'write_counts_characters', tool: 'Write', args: { file_path: 'u.txt', content: 'héllo ✓' }, files: ['u.txt'] },
  { name: 'write_missing_content', tool: 'Write', args: { file_path: 'w.txt' }, files: ['w.txt'] },
  { name: 'write_null_content', tool: 'Write', args: { file_path: 'w.txt', content: null }, files: ['w.txt'] },
  { name: 'write_number_content', tool: 'Write', args: { file_path: 'w.txt', content: 42 }, files: ['w.txt'] },
  { name: 'write_object_content', tool: 'Write', args: { file_path: 'w.json', content: { a: 1, b: [true, null] } }, files: ['w.json'] },
  { name: 'write_crlf_content', tool: 'Write', args: { file_path: 'w.txt', content: 'a\r\nb\rc' }, files: ['w.txt'] },
  { name: 'write_overwrite', tool: 'Write', args: { file_path: 'a.txt', content: 'new\n' }, files: ['a.txt'] },
  { name: 'write_absolute_inside', tool: 'Write', args: { file_path: '/workspace/in.txt', content: 'in' }, files: ['in.txt'] },
  { name: 'write_absolute_outside', tool: 'Write', args: { file_path: '/tmp/leaf-out/abs.txt', content: 'ab' } },
  { name: 'write_onto_directory', tool: 'Write', args: { file_path: 'src', content: 'x' } },
  { name: 'write_missing_path', tool: 'Write', args: { content: 'x' } },
  { name: 'write_path_alias', tool: 'Write', args: { path: 'alias.txt', content: 'via path' }, files: ['alias.txt'] },
  { name: 'write_dangling_symlink', tool: 'Write', args: { file_path: 'dl.txt', content: 'through' }, setup: 'ln -s /tmp/made.txt dl.txt' },
  // ---- Edit ----
  { name: 'edit_basic', tool: 'Edit', args: { file_path: 'a.txt', old_string: 'line two', new_string: 'line 2' }, files: ['a.txt'] },
  { name: 'edit_not_found', tool: 'Edit', args: { file_path: 'a.txt', old_string: 'line four', new_string: 'x' }, files: ['a.txt'] },
  { name: 'edit_ambiguous', tool: 'Edit', args: { file_path: 'src/pkg/mod.py', old_string: 'return 1', new_string: 'return 2' }, files: ['src/pkg/mod.py'] },
  { name: 'edit_replace_all', tool: 'Edit', args: { file_path: 'src/pkg/mod.py', old_string: 'return 1', new_string: 'return 2', replace_all: true }, files: ['src/pkg/mod.py'] },
  { name: 'edit_replace_all_yes', tool: 'Edit', args: { file_path: 'src/pkg/mod.py', old_string: 'return 1', new_string: 'return 3', replace_all: 'yes' }, files: ['src/pkg/mod.py'] },
  { name: 'edit_replace_all_false_string', tool: 'Edit', args: { file_path: 'src/pkg/mod.py', old_string: 'return 1', new_string: 'r', replace_all: 'false' } },
  { name: 'edit_empty_old', tool: 'Edit', args: { file_path: 'a.txt', old_string: '', new_string: 'x' } },
  { name: 'edit_replace_all_number', tool: 'Edit', args: { file_path: 'src/pkg/mod.py', old_string: 'return 1', new_string: 'return 4', replace_all: 1 }, files: ['src/pkg/mod.py'] },
  { name: 'edit_path_alias', tool: 'Edit', args: { path: 'a.txt', old_string: 'three', new_string: '3' }, files: ['a.txt'] },
  { name: 'edit_missing_new', tool: 'Edit', args: { file_path: 'a.txt', old_string: 'line one\n' }, files: ['a.txt'] },
  { name: 'edit_crlf_file', tool: 'Edit', args: { file_path: 'crlf.txt', old_string: 'y\nz', new_string: 'Y\nZ' }, files: ['crlf.txt'] },
  { name: 'edit_missing_file', tool: 'Edit', args: { file_path: 'gone.py', old_string: 'a', new_string: 'b' } },
  { name: 'edit_number_old_string', tool: 'Edit', args: { file_path: 'src/main.py', old_string: 1, new_string: 2 }, files: ['src/main.py'] },
  { name: 'edit_binary_file', tool: 'Edit', args: { file_path: 'bin.dat', old_string: 'ABC', new_string: 'abc' }, files: ['bin.dat'] },
  { name: 'edit_dollar_patterns', tool: 'Edit', args: { file_path: 'a.txt', old_string: 'one', new_string: "$& $1 $$ \\1" }, files: ['a.txt'] },
  { name: 'edit_directory', tool: 'Edit', args: { file_path: 'docs', old_string: 'a', new_string: 'b' } },
  // ---- Glob ----
  { name: 'glob_recursive', tool: 'Glob', args: { pattern: '**/*.py' } },
  { name: 'glob_top_level', tool: 'Glob', args: { pattern: '*.txt' } },
  { name: 'glob_in_path', tool: 'Glob', args: { pattern: '*.md', path: 'docs' } },
  { name: 'glob_no_match', tool: 'Glob', args: { pattern: '**/*.rs' } },
  { name: 'glob_empty_pattern', tool: 'Glob', args: { pattern: '' } },
  { name: 'glob_missing_pattern', tool: 'Glob', args: { path: 'src' } },
  { name: 'glob_absolute_pattern', tool: 'Glob', args: { pattern: '/workspace/src/**/*.py' } },
  { name: 'glob_limit_by_env', tool: 'Glob', args: { pattern: '**/*' }, env: { LEAF_GLOB_LIMIT: '2' } },
  { name: 'glob_skips_hidden_and_dirs', tool: 'Glob', args: { pattern: '*' }, setup: 'touch .hidden' },
  { name: 'glob_outside', tool: 'Glob', args: { pattern: 'os*', path: '/proc/sys/kernel' } },
  { name: 'glob_dotdot', tool: 'Glob', args: { pattern: '../workspace/docs/*' } },
  { name: 'glob_question_mark', tool: 'Glob', args: { pattern: 'src/m?in.py' } },
  // ---- Bash ----
  { name: 'bash_streams', tool: 'Bash', args: { command: 'echo hi; echo err >&2' } },
  { name: 'bash_exit_code', tool: 'Bash', args: { command: 'echo partial; exit 3' } },
  { name: 'bash_carriage_returns', tool: 'Bash', args: { command: "printf 'a\\r\\nb\\rc\\n'" } },
  { name: 'bash_timeout_seconds', tool: 'Bash', args: { command: 'echo start; sleep 5', timeout: 1 } },
  { name: 'bash_timeout_ms', tool: 'Bash', args: { command: 'sleep 5', timeout_ms: 300 } },
  { name: 'bash_timeout_large_is_ms', tool: 'Bash', args: { command: 'sleep 5', timeout: 1500 } },
  { name: 'bash_timeout_under_minimum', tool: 'Bash', args: { command: 'sleep 5', timeout: 0.01 } },
  { name: 'bash_timeout_as_string', tool: 'Bash', args: { command: 'echo ok', timeout: '2' } },
  { name: 'bash_killed_by_signal', tool: 'Bash', args: { command: 'kill -9 $$' } },
  { name: 'bash_empty_command', tool: 'Bash', args: { command: '' } },
  { name: 'bash_missing_command', tool: 'Bash', args: { description: 'nothing' } },
  { name: 'bash_truncated_by_env', tool: 'Bash', args: { command: 'seq 1 100' }, env: { LEAF_BASH_OUTPUT_CHARS: '40' } },
  { name: 'bash_binary_output', tool: 'Bash', args: { command: "printf '\\377\\376'" } },
  { name: 'bash_working_directory', tool: 'Bash', args: { command: 'pwd' } },
  { name: 'bash_no_output', tool: 'Bash', args: { command: 'true', description: 'does nothing' } },
  { name: 'bash_default_timeout_by_env', tool: 'Bash', args: { command: 'echo a; sleep 5' }, env: { LEAF_BASH_TIMEOUT_SEC: '1' } },
  { name: 'bash_timeout_ms_as_string', tool: 'Bash', args: { command: 'sleep 5', timeout_ms: '500' } },
  { name: 'bash_reads_no_stdin', tool: 'Bash', args: { command: 'cat; echo done' } },
  { name: 'bash_background_process', tool: 'Bash', args: { command: 'sleep 30 >/dev/null 2>&1 & echo started' } },
  { name: 'bash_changes_file', tool: 'Bash', args: { command: "sed -i 's/one/ONE/' a.txt && cat a.txt" }, files: ['a.txt'] },
  // ---- dispatch ----
  { name: 'unknown_tool', tool: 'Grep', args: { pattern: 'x' } },
  { name: 'empty_tool_name', tool: '', args: {} },
  { name: 'lowercase_tool_name', tool: 'read', args: { file_path: 'a.txt' } },
];
