/** Usage text for `frognano` and each command; printed by --help and after a usage error. */

export const MAIN_HELP = `frognano — run the FrogNano-4B coding agent on a repository from the command line

Usage:
  frognano solve <repo-dir> (--issue-file FILE | --issue TEXT | --github OWNER/REPO#N) [options]
  frognano verify <repo-dir> <patch-file> [--test CMD]... [options]
  frognano doctor [options]
  frognano replay <trajectory.json> [--markdown]
  frognano view <trajectory.json> [--port N]
  frognano model pull [--dir DIR] [--onnx DIR]
  frognano model export <hf-dir> <onnx-dir> [options]
  frognano eval --dataset FILE|NAME --out DIR [options]   (and: frognano eval grade DIR)
  frognano <command> --help

Commands:
  solve    Let the model work on an issue in a sandboxed copy of a repository; writes patch + trajectory.
  verify   Measure a patch in fresh sandboxes, base vs base + patch: fixed tests, regressions, findings.
  doctor   Check this machine: Node, Redis, Docker/bubblewrap sandbox, scanners, model, GitHub App credentials.
  replay   Print a trajectory written by solve (or by the runner) readably.
  view     Serve a trajectory as the app's run page, on 127.0.0.1, for a browser.
  model    Download the FrogNano-4B weights from the Hugging Face Hub (model pull); export them to the ONNX
           directory the in-process backend loads (model export).
  eval     Run SWE-bench-format instances through the bot's pipeline into predictions; grade them with the
           official harness (docs/evaluation.md).

Exit codes:
  0    solve produced a patch / doctor: every required check passed / verify: success or neutral
  1    solve finished without a patch / doctor: a required check failed
  2    usage error (unknown option, missing argument)
  3    setup error (missing model dir, unreadable or non-git repo, no sandbox, issue not found);
       verify: a side could not be measured (the patch does not apply, the sandbox did not start)
  4    model or runtime error during the run
  5    verify: the verdict is a failure (a regression, a failing test command, a blocking finding)
  130  interrupted (Ctrl-C); the partial trajectory is still written
`;

export const SOLVE_HELP = `Usage: frognano solve <repo-dir> (--issue-file FILE | --issue TEXT | --github OWNER/REPO#N) [options]

Runs the Leaf agent loop on an issue. The repository is never modified: the model works on a copy
inside the sandbox, and the result is written to --out.

The issue (exactly one):
  --issue-file FILE        Markdown file; its first line is the title, the rest the body
  --issue TEXT             The issue as text; first line title, rest body
  --github OWNER/REPO#N    Fetch title and body from GitHub (GITHUB_TOKEN for private repositories)

The model (one of; default from the environment: FROGNANO_MODEL_DIR, FROGNANO_OPENAI_BASE_URL +
FROGNANO_OPENAI_MODEL, or FROGNANO_REPLAY_FILE; the API key only ever from FROGNANO_OPENAI_API_KEY):
  --model-dir DIR          Local ONNX model directory (onnxruntime-node)
  --endpoint URL           OpenAI-compatible server (vLLM, llama.cpp), with --model NAME
  --model NAME             Model name to request from --endpoint
  --replay FILE            Replay scripted turns or an earlier trajectory instead of a model

The sandbox:
  --sandbox KIND           docker | bwrap | local (default FROGNANO_SANDBOX, else docker if usable, else bwrap;
                           local runs commands unisolated and is only used when asked for)

Limits (defaults: upstream Leaf's SWE-bench Verified eval):
  --max-turns N            Model calls before the run stops (default 100)
  --wall-time DURATION     Time budget, checked before each turn (default 50m), e.g. 30m, 1h30m, 900 (seconds)
  --max-new-tokens N       Tokens the model may generate per turn (default: no cap beyond the context)
  --context-tokens N       Context budget, checked after each turn (default 65536, or the model's window if smaller)
  --bash-timeout DURATION  Bash timeout when the model gives none (default 120s, as upstream)

Sampling (defaults: upstream Leaf's eval; the runner reads FROGNANO_TEMPERATURE, FROGNANO_TOP_P ... the same way):
  --temperature T          default 0.6 (0: greedy)
  --top-p P                default 0.95
  --top-k K                default 20 (0: no cut)
  --min-p P                default 0
  --repetition-penalty R   default 1.0
  --seed N                 default 42
  --thinking true|false    Qwen3.5 thinking (default true)
  --parallel-tool-calls true|false  default true

Checks (may be repeated; default: setupCommands and testCommands of the repository's .github/frognano.yml):
  --setup CMD              Command run before the model starts (e.g. "npm ci"), and in each verification sandbox
  --test CMD               Command run on the result: in the model's workspace (shown as what the model's workspace
                           said), then in the verification (the result; see frognano verify --help)
  --no-verify              Do not verify the patch after the run (nor does verify.enabled: false)

Verification (on by default when there are test commands and a patch): the patch is measured in fresh sandboxes
on the base commit and on base + patch (set-up, tests, per-test results, scans of added lines); the verdict is
printed after the run and written as verification.json. Its settings come from the verify section of
.github/frognano.yml (timeoutMinutes, reports, security, secrets).

Output:
  --out DIR                Where changes.patch, trajectory.json, trajectory.md and verification.json go
                           (default ./frognano-out/<timestamp>; never inside the repository)
  --json                   Print a machine-readable summary on stdout (progress stays on stderr)
  -h, --help               This text

Examples:
  frognano solve . --issue "Fix the off-by-one in range()" --endpoint http://localhost:8000/v1 --model frognano-4b
  frognano solve ~/src/app --github acme/app#123 --model-dir ~/models/frognano-4b --sandbox docker --max-turns 40
  frognano solve ./repo --issue-file bug.md --replay turns.json --sandbox bwrap --out /tmp/run1 --json
`;

export const VERIFY_HELP = `Usage: frognano verify <repo-dir> <patch-file> [--test CMD]... [options]

Verifies a patch, whoever wrote it: a \`git diff\` of <repo-dir> against its HEAD (or --base). Each side runs in a
fresh sandbox on a clean clone of the base commit (the working tree is never used): the base, and the base with
the patch applied. Each runs the set-up and then the test commands in the bot's clean shell; per-test results
(JUnit reports, pytest/unittest/go/jest/cargo output) are compared: fixed tests, regressions, still failing, new
tests. Lines the patch adds are scanned for security problems and secrets. The repository is never modified.

Options:
  --base COMMIT            The commit the patch applies to (default HEAD)
  --setup CMD              Set-up command, run before the tests in each sandbox (may be repeated)
  --test CMD               Test command (may be repeated); at least one, from here or the repository's config
                           (default for both: setupCommands and testCommands of .github/frognano.yml)
  --sandbox KIND           docker | bwrap | local (default FROGNANO_SANDBOX, else docker if usable, else bwrap)
  --timeout-minutes N      Bound on the whole verification (default verify.timeoutMinutes, else 30)
  --no-security            Skip the security scan of added lines
  --no-secrets             Skip the secrets scan of added lines
  --out DIR                Where verification.json goes (default ./frognano-out/<timestamp>; never inside the
                           repository)
  --json                   Print the verdict as JSON on stdout (progress stays on stderr)
  -h, --help               This text

Exit codes: 0 success or neutral, 5 failure (a regression, a failing test command, a blocking finding),
3 a side could not be measured (the patch does not apply, the sandbox did not start), 2 usage error.

Examples:
  git diff > fix.patch && frognano verify . fix.patch --test "python3 -m pytest -q"
  frognano verify ~/src/app run1/changes.patch --base v1.2.0 --setup "npm ci" --test "npm test" --sandbox docker
  frognano verify ./repo pr.diff --json | jq '.verdict.regressions[].id'
`;

export const DOCTOR_HELP = `Usage: frognano doctor [options]
       frognano doctor --model [--model-dir DIR | --endpoint URL --model NAME]

Checks what frognano needs and prints one line per check (✓ ok, ✗ failed, ! warning) with a fix hint.
Exits 1 when a required check fails.

With --model only the model is checked (no Node, Redis, sandbox, scanner or GitHub App checks), and having none
configured fails: an ONNX directory must load and generate one token; an OpenAI-compatible server must serve the
model, accept tool_choice "auto" and answer a tool_choice "required" request with a parsed tool call (what the
Leaf loop needs: vLLM's --tool-call-parser, llama-server's --jinja). Exit 0 when it works, 1 when not.

Options:
  --model [NAME]     Check only the model; with --endpoint, NAME is the model the server serves
  --sandbox KIND     Check only this sandbox kind (docker | bwrap | local); default: docker and bwrap,
                     at least one of which must work
  --model-dir DIR    Check this ONNX model directory (loads it and generates one token)
  --endpoint URL     Check this OpenAI-compatible endpoint (with --model NAME)
  --json             Machine-readable result on stdout
  -h, --help         This text

Environment read: REDIS_URL, FROGNANO_SANDBOX and FROGNANO_SANDBOX_*, FROGNANO_BACKEND / FROGNANO_MODEL_DIR /
FROGNANO_OPENAI_*, APP_ID, PRIVATE_KEY or PRIVATE_KEY_PATH, WEBHOOK_SECRET.

Examples:
  frognano doctor
  REDIS_URL=redis://redis:6379 frognano doctor --sandbox docker --model-dir /models/frognano-4b
  frognano doctor --json | jq '.checks[] | select(.status != "ok")'
  frognano doctor --endpoint http://gpu-box:8000/v1 --model frognano-4b     # the model alone
  FROGNANO_MODEL_DIR=/models/FrogNano-4B-onnx FROGNANO_ONNX_DTYPE=q4 frognano doctor --model
`;

export const REPLAY_HELP = `Usage: frognano replay <trajectory.json> [options]

Prints a trajectory readably: each turn's tool calls with their arguments, trimmed observations,
exit reason, tokens and the patch's file stat.

Options:
  --markdown         Print the Markdown rendering instead (the same as trajectory.md)
  --full             Do not trim long observations
  -h, --help         This text

Examples:
  frognano replay frognano-out/2026-01-01T10-00-00Z/trajectory.json
  frognano replay run/trajectory.json --markdown > run.md
`;

export const VIEW_HELP = `Usage: frognano view <trajectory.json> [options]

Serves the trajectory as the same page the app shows reviewers (every step, its reasoning, tool calls,
edits as diffs, timing and tokens; j/k between steps), on 127.0.0.1 only, with no sign-in. Ctrl-C stops it.
It answers only requests addressed to 127.0.0.1, localhost or [::1] with its port (anything else gets 421),
so a web page cannot reach it through a DNS name of its own.

Options:
  --port N           Port to listen on (default: any free port)
  -h, --help         This text

Examples:
  frognano view frognano-out/2026-01-01T10-00-00Z/trajectory.json
  frognano view run/trajectory.json --port 8400
`;

export const MODEL_HELP = `Usage: frognano model pull [--dir DIR] [--repo OWNER/NAME] [--revision REV] [--onnx DIR [export options]]
       frognano model export <hf-dir> <onnx-dir> [options]     (frognano model export --help)

pull downloads the published FrogNano-4B weights (Hugging Face layout: safetensors, config, tokenizer, chat
template) from the Hugging Face Hub into DIR. Resumable: an interrupted pull continues where it stopped (HTTP Range);
every file is checked against the Hub's checksum (LFS sha256, git sha1 for small files) before it is kept.
About 9.5 GB of disk. It prints the vllm serve line for DIR; with --onnx it then exports DIR to ONNX (frognano model export --help).

Options:
  --dir DIR                Where the weights go (default models/FrogNano-4B-2609 under the current directory)
  --repo OWNER/NAME        Hub repository (default microsoft/FrogNano-4B-2609)
  --revision REV           Branch, tag or commit (default main)
  --onnx DIR               After the pull, run \`frognano model export\` from the weights into DIR;
                           --python, --dtype and --timeout are passed to it

Environment:
  HF_TOKEN                 Hugging Face token, sent as a bearer token (gated or private repositories)
  HF_ENDPOINT              Hub address (default https://huggingface.co; a mirror)

Examples:
  frognano model pull
  HF_ENDPOINT=https://hf-mirror.example frognano model pull --dir /models/FrogNano-4B-2609
  frognano model pull --dir /models/FrogNano-4B-2609 --onnx /models/FrogNano-4B-onnx --dtype q4
`;

export const MODEL_EXPORT_HELP = `Usage: frognano model export <hf-dir> <onnx-dir> [--python PATH] [--dtype fp32|fp16|q4 ...] [--timeout DURATION]

Exports a Qwen3.5 checkpoint in the Hugging Face layout (what \`frognano model pull\` downloads) to the ONNX
directory the onnx backend loads (FROGNANO_MODEL_DIR): onnx/decoder_model_merged*.onnx and onnx/embed_tokens*.onnx,
with the model's own chat template (chat_template.jinja), tokenizer, config.json and generation_config.json. It
checks <hf-dir> first, runs scripts/export_onnx.py (PyTorch traces the model; its progress is shown), loads the
result and generates one token (as \`frognano doctor\` does), then prints the settings that use it.

Options:
  --python PATH            A Python with torch, transformers>=5, onnx, onnxscript and onnxruntime
                           (else FROGNANO_EXPORT_PYTHON; else a venv in ~/.cache/frognano/export-venv, created
                           with pip install -r scripts/export-requirements.txt: needs PyPI, a few GB, once)
  --dtype TYPE             Weight types to keep, repeatable or comma-separated: fp32, fp16, q4 (default q4,
                           the one that runs a 4B at a usable speed on a CPU)
  --timeout DURATION       Stop the exporter after this long (default 3h)

What FrogNano-4B needs (estimates from its parameter count, about 4e9 of the language model, not measured here:
4 bytes a parameter in fp32, 2 in bf16/fp16, about 0.6 in q4):
  disk                     about 8-9.5 GB of bf16 weights downloaded; the fp32 graphs about 16 GB while the
                           export runs (kept with --dtype fp32); q4 adds about 3 GB, fp16 about 8 GB
  RAM                      about twice the fp32 size (the fp32 model in PyTorch and the traced graph): 32 GB
  time                     tens of minutes on a CPU (no GPU needed)
The command prints these figures for the directory it is given before it starts.

Exit codes: 0 exported and loads, 2 usage error, 3 the input directory, the output directory or the Python is
not usable (the message says which and what to do), 4 the exporter failed, ran past --timeout, or its output does
not load.

Examples:
  frognano model export models/FrogNano-4B-2609 models/FrogNano-4B-onnx
  frognano model export /models/FrogNano-4B-2609 /models/FrogNano-4B-onnx --dtype fp32,q4 --python ~/venv/bin/python
`;

export const EVAL_GRADE_HELP = `Usage: frognano eval grade <out-dir> [--python PATH | --venv DIR] [--run-id ID] [--report FILE]

Grades the predictions of an eval run with SWE-bench's own harness (python -m swebench.harness.run_evaluation,
in <out-dir>/grade; it needs Docker and pulls or builds the instances' eval images), reads its run report, prints
resolved X of Y with the per-repository breakdown beside the model card's 61.5%, and writes it into
eval-summary.json under "grade".

  --python PATH            A Python with swebench installed (else a venv is used, see --venv)
  --venv DIR               The venv to use, made with pip install swebench==4.1.0 when it has no swebench
                           (default ~/.cache/frognano/swebench-4.1.0; needs PyPI)
  --run-id ID              The harness's run id (default frognano-eval; a rerun with the same id skips what it graded)
  --harness-workers N      The harness's --max_workers (default 4)
  --namespace NS           The harness's image namespace (default: the harness's own, swebench)
  --grade-timeout DURATION Stop the harness after this long (default 12h)
  --report FILE            Read this run report (written by the harness earlier, or elsewhere) instead of running it
`;

export const EVAL_HELP = `Usage: frognano eval --dataset FILE|NAME --out DIR [options]
       frognano eval grade DIR [options]     (frognano eval grade --help)

Runs SWE-bench-format instances (instance_id, repo, base_commit, problem_statement, ...) through the bot's own
solve(): each in a docker sandbox of the instance's image with the repository at /testbed, the first user message
the bare problem statement, upstream Leaf's SWE-bench Verified limits and sampling, the patch git diff against
base_commit inside the sandbox. Writes predictions.jsonl (SWE-bench's format), a trajectory per instance and
eval-summary.json. A second run with the same --out skips the instances that have a prediction.

The instances:
  --dataset FILE|NAME      .jsonl, .json (an array) or .parquet, or a Hugging Face dataset name such as
                           princeton-nlp/SWE-bench_Verified (downloaded once into ~/.cache/frognano/datasets;
                           HF_ENDPOINT and HF_TOKEN as for frognano model pull)
  --split NAME             The Hub dataset's split (default test)
  --instances A,B,...      Only these instance ids
  --shuffle                Shuffle (with --seed, default 42) before --limit
  --limit N                At most N instances
  --image-template T       The instance's image; {id} is the instance id with __ as _1776_, lower case
                           (default swebench/sweb.eval.x86_64.{id}:latest); pull the images first
  --activate CMD           Written to the model's ~/.bash_profile so its shell runs in the image's environment
                           (default: source /opt/miniconda3/bin/activate && conda activate testbed; '' for none)

The run:
  --out DIR                Where everything goes (required; resumable)
  --workers N              Instances at once (default 1); each is a container, and with --model-dir a model copy
  --model-name NAME        predictions' model_name_or_path (default: the model's name)
  --grade                  Grade when every instance has a prediction (the options of frognano eval grade apply)
  --queue                  Put the instances on the runners' queue (REDIS_URL) as eval rounds and collect their
                           predictions here; the runners' model, sandbox and limits run them. Ctrl-C stops waiting
                           (the jobs keep running); the same command again collects them
  --tenant NAME            With --queue: the fair share's and the quotas' tenant, eval:NAME (default: --out's name)

The model, the sandbox limits (FROGNANO_SANDBOX_* environment), --max-turns, --wall-time, --max-new-tokens,
--context-tokens, --bash-timeout and the sampling options are solve's (frognano solve --help); --seed is also
the shuffle's seed. --sandbox can only be docker.

Exit codes: 0 every instance has a prediction (and, with --grade, it was graded); 3 setup error; 4 some instance
could not run (see eval-summary.json; run again to retry it) or the harness failed; 130 interrupted (what is done
is kept).

Examples:
  frognano eval --dataset verified.parquet --limit 20 --shuffle --out runs/vllm-bf16 \\
    --endpoint http://localhost:8000/v1 --model frognano-4b --workers 4 --grade
  frognano eval grade runs/vllm-bf16 --python ~/swebench-venv/bin/python
`;

export const HELP: Record<string, string> = {
  eval: EVAL_HELP,
  model: MODEL_HELP,
  'model export': MODEL_EXPORT_HELP,
  solve: SOLVE_HELP,
  verify: VERIFY_HELP,
  doctor: DOCTOR_HELP,
  replay: REPLAY_HELP,
  view: VIEW_HELP,
};
