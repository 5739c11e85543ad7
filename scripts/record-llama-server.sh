#!/usr/bin/env bash
# Records real llama.cpp `llama-server --jinja` responses as test fixtures (test/fixtures/model-servers/llamacpp/):
# the status line, headers and body exactly as curl received them (chunked framing decoded).
#
# Usage: scripts/record-llama-server.sh LLAMA_SERVER_BINARY MODEL.gguf [OUT_DIR]
# Meant for the tiny model of scripts/tiny-gguf-for-llama-server.py, whose fixed preferences (end of turn, then
# <tool_call>, then "K") make the answers below deterministic: tools take non-string arguments (the grammar fills
# them), and logit_bias bans end of turn (263) and <tool_call> (264) where reasoning text is wanted.
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
# While the weights load, requests get 503 "Loading model": record one.
for _ in $(seq 1 200); do
  if curl -sS -i -X POST -H 'content-type: application/json' --data '{"model":"frognano-4b","messages":[{"role":"user","content":"hi"}]}' \
    "http://127.0.0.1:$port/v1/chat/completions" >"$out/loading-503.http" 2>/dev/null; then break; fi
  sleep 0.02
done
head -1 "$out/loading-503.http" | grep -q ' 503 ' || rm -f "$out/loading-503.http"
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { cat "$log"; exit 1; }

base=http://127.0.0.1:$port
tools='[{"type":"function","function":{"name":"report_status","description":"Report whether the fix is ready.","parameters":{"type":"object","properties":{"ready":{"type":"boolean"},"attempts":{"type":"integer"}},"required":["ready"]}}},{"type":"function","function":{"name":"seek","description":"Move to a line.","parameters":{"type":"object","properties":{"offset":{"type":"integer"}},"required":["offset"]}}}]'
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
# vLLM's /tokenize body (what the client tries first): llama.cpp answers 200 with no tokens.
record tokenize-vllm-style POST /tokenize '{"model":"frognano-4b","messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true}'
record tokenize POST /tokenize '{"content":"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n","add_special":true}'
record required-tool-call POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":[{\"role\":\"user\",\"content\":\"Call report_status with ready=true.\"}],\"tools\":$probe_tools,\"tool_choice\":\"required\",\"max_tokens\":256,\"temperature\":0,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record auto-probe POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":[{\"role\":\"user\",\"content\":\"Call report_status with ready=true.\"}],\"tools\":$probe_tools,\"tool_choice\":\"auto\",\"max_tokens\":1,\"temperature\":0,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record tool-calls POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"required\",\"parallel_tool_calls\":true,\"max_tokens\":400,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record stream-tool-calls POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"required\",\"parallel_tool_calls\":true,\"max_tokens\":400,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":false},\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
record truncated-tool-call POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"required\",\"max_tokens\":12,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record stream-truncated-tool-call POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"required\",\"max_tokens\":12,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":false},\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
# Sampled at 0.6 the model opens a call now and then; cut at max_tokens, llama-server returns the partial call.
record auto-cut-tool-call POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"auto\",\"max_tokens\":64,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record final-answer POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"auto\",\"max_tokens\":64,\"temperature\":0,\"chat_template_kwargs\":{\"enable_thinking\":false}}"
record thinking POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"auto\",\"max_tokens\":24,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":true},\"logit_bias\":{\"263\":-100,\"264\":-100}}"
record stream-thinking POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":$messages,\"tools\":$tools,\"tool_choice\":\"auto\",\"max_tokens\":24,$sampling,\"chat_template_kwargs\":{\"enable_thinking\":true},\"logit_bias\":{\"263\":-100,\"264\":-100},\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
long=$(python3 -c 'print("word " * 5000)')
record overflow POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":[{\"role\":\"user\",\"content\":\"$long\"}],\"max_tokens\":16}"
record stream-overflow POST /v1/chat/completions "{\"model\":\"frognano-4b\",\"messages\":[{\"role\":\"user\",\"content\":\"$long\"}],\"max_tokens\":16,\"stream\":true}"
record bad-request POST /v1/chat/completions '{"model":"frognano-4b","messages":"not a list"}'
echo "server log tail:"; tail -5 "$log"
