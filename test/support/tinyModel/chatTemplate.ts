/**
 * A Qwen3.5-style chat template (tools described in the system turn, qwen3_coder XML calls, tool responses grouped
 * in one user turn, reasoning kept for the turns after the last real user query). Not the official template, which
 * is test/fixtures/qwen35-tiny/chat_template.jinja: this one is small enough to read when a tiny-model test fails.
 */
export const CHAT_TEMPLATE = String.raw`{%- macro render_value(v) -%}
{%- if v is string -%}{{- v -}}{%- else -%}{{- v | tojson -}}{%- endif -%}
{%- endmacro -%}
{%- set ns = namespace(last_query=-1, system='') -%}
{%- for m in messages -%}
{%- if m.role == 'user' -%}{%- set ns.last_query = loop.index0 -%}{%- endif -%}
{%- endfor -%}
{%- if messages and messages[0].role == 'system' -%}{%- set ns.system = messages[0].content -%}{%- endif -%}
{%- if tools -%}
{{- '<|im_start|>system\n' -}}
{%- if ns.system -%}{{- ns.system | trim + '\n\n' -}}{%- endif -%}
{{- '# Tools\n\nYou have access to the following functions:\n\n<tools>' -}}
{%- for tool in tools -%}
{%- if tool.function is defined -%}{%- set fn = tool.function -%}{%- else -%}{%- set fn = tool -%}{%- endif -%}
{{- '\n<function>\n<name>' + fn.name + '</name>' -}}
{%- if fn.description -%}{{- '\n<description>' + fn.description | trim + '</description>' -}}{%- endif -%}
{{- '\n<parameters>' -}}
{%- if fn.parameters is defined and fn.parameters.properties is defined -%}
{%- for pname, p in fn.parameters.properties | items -%}
{{- '\n<parameter>\n<name>' + pname + '</name>' -}}
{%- if p.type is defined -%}{{- '\n<type>' + render_value(p.type) + '</type>' -}}{%- endif -%}
{%- if p.description is defined -%}{{- '\n<description>' + p.description | trim + '</description>' -}}{%- endif -%}
{%- if p.enum is defined -%}{{- '\n<enum>' + p.enum | tojson + '</enum>' -}}{%- endif -%}
{{- '\n</parameter>' -}}
{%- endfor -%}
{%- endif -%}
{%- if fn.parameters is defined and fn.parameters.required is defined -%}
{{- '\n<required>' + fn.parameters.required | tojson + '</required>' -}}
{%- endif -%}
{{- '\n</parameters>\n</function>' -}}
{%- endfor -%}
{{- '\n</tools>\n\nTo call a function, reply with exactly this format and nothing after it:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n</function>\n</tool_call>\n\nRules:\n- Every required parameter must be given.\n- Reasoning, if any, goes BEFORE the function call, never after it.\n- Without a suitable function, answer normally.<|im_end|>\n' -}}
{%- elif ns.system -%}
{{- '<|im_start|>system\n' + ns.system + '<|im_end|>\n' -}}
{%- endif -%}
{%- for m in messages -%}
{%- if m.role == 'system' -%}
{%- if not loop.first -%}{{- '<|im_start|>system\n' + m.content + '<|im_end|>\n' -}}{%- endif -%}
{%- elif m.role == 'user' -%}
{{- '<|im_start|>user\n' + m.content + '<|im_end|>\n' -}}
{%- elif m.role == 'assistant' -%}
{%- if m.reasoning is defined and m.reasoning is not none -%}{%- set reasoning = m.reasoning -%}
{%- elif m.reasoning_content is defined and m.reasoning_content is not none -%}{%- set reasoning = m.reasoning_content -%}
{%- else -%}{%- set reasoning = '' -%}{%- endif -%}
{{- '<|im_start|>assistant\n' -}}
{%- if loop.index0 > ns.last_query -%}
{{- '<think>\n' + reasoning | trim + '\n</think>\n\n' -}}
{%- endif -%}
{{- m.content | trim -}}
{%- if m.tool_calls is defined and m.tool_calls -%}
{%- for call in m.tool_calls -%}
{%- if call.function is defined -%}{%- set tc = call.function -%}{%- else -%}{%- set tc = call -%}{%- endif -%}
{%- if loop.first and m.content | trim -%}{{- '\n\n' -}}{%- elif not loop.first -%}{{- '\n' -}}{%- endif -%}
{{- '<tool_call>\n<function=' + tc.name + '>\n' -}}
{%- if tc.arguments is mapping -%}
{%- for key, value in tc.arguments | items -%}
{{- '<parameter=' + key + '>\n' + render_value(value) + '\n</parameter>\n' -}}
{%- endfor -%}
{%- elif tc.arguments -%}
{{- tc.arguments + '\n' -}}
{%- endif -%}
{{- '</function>\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif m.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' + m.content + '\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}
{{- '<think>\n\n</think>\n\n' -}}
{%- else -%}
{{- '<think>\n' -}}
{%- endif -%}
{%- endif -%}`;
