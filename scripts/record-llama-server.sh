#!/usr/bin/env bash
# Records real llama.cpp `llama-server --jinja` responses as test fixtures (test/fixtures/model-servers/llamacpp/):
# the status line, headers and body exactly as curl received them (chunked framing decoded).
#
# Usage: scripts/record-llama-server.sh LLAMA_SERVER_BINARY MODEL.gguf [OUT_DIR]
# The model can be the tiny random one from scripts/tiny-gguf-for-llama-server.py: it knows nothing, but with
# tool_choice "required" llama-server's grammar makes it emit a tool call that the server parses.
set -euo pipefail
server_bin=$1 model=$2 out=${3:-test/fixtures/model-servers/llamacpp}
port=${PORT:-8089}
mkdir -p "$out"
log=$(mktemp)
# Two slots sharing a 4096-token KV (each request may use all of it); the alias is the served model name.
"$server_bin" -m "$model" --alias frognano-4b --jinja -c 4096 --parallel 2 --kv-unified --port "$port" --host 127.0.0.1 \
  --seed 42 -t 2 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { cat "$log"; exit 1; }

base=http://127.0.0.1:$port
tools='[{"type":"function","function":{"name":"Bash","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}},{"type":"function","function":{"name":"Read","description":"Read a file","parameters":{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"integer"}},"required":["file_path"]}}}]'
probe_tools='[{"type":"function","function":{"name":"report_status","description":"Report that the service is ready.","parameters":{"type":"object","properties":{"ready":{"type":"boolean"}},"required":["ready"]}}}]'
messages='[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"Fix the CRLF bug in src/io.py."}]'
sampling='"temperature":0.6,"top_p":0.95,"top_k":20,"min_p":0,"repetition_penalty":1,"seed":42'

record() { # name method path [json body] [extra curl args...]
  local name=$1 method=$2 path=$3 body=${4:-}
  shift 4 || shift $#
  if [ -n "$body" ]; then
    curl -sS -i -N -X "$method" -H 'content-type: application/json' --data "$body" "$@" "$base$path" >"$out/$name.http"
  else
    curl -sS -i -N -X "$method" "$@" "$base$path" >"$out/$name.http"
  fi
  echo "recorded $name: $(head -1 "$out/$name.http" | tr -d '\r')"
}

record models GET /v1/models
record props GET /props
record apply-template POST /apply-template "{\"messages\":$messages,\"tools\":$tools}"
record tokenize POST /tokenize '{"content":"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n","add_special":true}'
record required-tool-call POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":[{\"role\":\"user\",\"content\":\"Call report_status with ready=true.\"}],\"tools\":$probe_tools,\"tool_choice\":\"required\",\"max_tokens\":256,\"temperature\":0,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record auto-probe POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":[{\"role\":\"user\",\"content\":\"Call report_status with ready=true.\"}],\"tools\":$probe_tools,\"tool_choice\":\"auto\",\"max_tokens\":1,\"temperature\":0,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record tool-calls POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"required\",\"parallel_tool_calls\":true,\"max_tokens\":400,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record stream-tool-calls POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"required\",\"parallel_tool_calls\":true,\"max_tokens\":400,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":false},\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
record truncated-tool-call POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"required\",\"max_tokens\":12,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record stream-truncated-tool-call POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"required\",\"max_tokens\":12,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":false},\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
record thinking POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"auto\",\"max_tokens\":24,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":true}}"
record stream-thinking POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"auto\",\"max_tokens\":24,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":true},\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
long=$(python3 -c 'print("word " * 5000)')
record overflow POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":[{\"role\":\"user\",\"content\":\"$long\"}],\"max_tokens\":16}"
record stream-overflow POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":[{\"role\":\"user\",\"content\":\"$long\"}],\"max_tokens\":16,\"stream\":true}"
record bad-request POST /v1/chat/completions '{"model":"frognano-4b","messages":"not a list"}'
echo "server log tail:"; tail -5 "$log"
