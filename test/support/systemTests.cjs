/**
 * The `system` jest project: test files that must run one at a time (`--runInBand`), each with why. Every other
 * test file is in the `unit` project, which runs in parallel workers (jest.config.js). A file belongs here when it
 * drives a real sandbox end to end, a browser, or Redis servers that it kills, or when its assertions depend on
 * timing that a second busy worker would upset; not because it shares Redis keys, ports, env vars or names with
 * another file (fix that instead: test/support/node-environment.cjs gives each worker its own Redis database).
 * Paths are relative to the repository root.
 */
module.exports = [
  // Real docker sandbox containers (the frognano-sandbox:test image): each starts containers, whole rounds or the
  // attack suite; parallel containers on a small machine make their time limits flaky.
  'test/sandbox/docker.test.ts', // container life cycle, the reaper against a crashed runner's container
  'test/sandbox/solve-docker.test.ts', // a whole solve inside a container
  'test/sandbox/index.test.ts', // sandbox selection and isolation on docker and bwrap, builds a busybox image
  'test/sandbox/network.test.ts', // container and bwrap networks, egress policy against real sockets
  'test/sandbox/binaryStreams.test.ts', // byte streams through docker exec and bwrap
  'test/security/attacks.test.ts', // the known sandbox escapes, on docker and bwrap, with process-table checks
  'test/runner/dockerEndToEnd.test.ts', // the runner's whole round on the docker sandbox
  'test/runner/setupSnapshotEndToEnd.test.ts', // setup snapshot committed as an image, then a round from it
  'test/runner/verifyEndToEnd.test.ts', // verification round on both sandboxes
  'test/leaf/setupSnapshot.test.ts', // docker commit / image snapshots of a setup
  'test/leaf/conformance.test.ts', // 96 Leaf tool calls byte for byte inside both sandboxes
  'test/verify/scans.test.ts', // bandit and the scanners inside both sandboxes
  'test/verify/verifyChange.test.ts', // pytest suites before/after a change inside both sandboxes
  'test/verify/verifyJest.test.ts', // a jest suite (jest unpacked in the sandbox) before/after a change, both sandboxes
  'test/verify/scansJs.test.ts', // the ESLint scan inside both sandboxes, builds an image without the bundle
  'test/sandbox/workdir.test.ts', // docker containers with the workspace mounted at another path (/testbed)
  'test/cli/eval.test.ts', // `frognano eval` on fixture SWE-bench images it builds, two workers, Ctrl-C
  'test/cli/evalQueue.test.ts', // `frognano eval --queue`: fixture instances as eval rounds of a real runner, docker
  'test/runner/warmStartEndToEnd.test.ts', // a pull request's rounds restoring set-up snapshots on docker and bwrap
  // Whole rounds or CLI solves in the real bubblewrap sandbox, several per file: the heaviest CPU users of the suite
  // (each file minutes on a loaded 2-core machine), and their multi-round cases run close to the 60 s test timeout
  // when a second worker competes for the cores.
  'test/sandbox/bwrap.test.ts', // the bwrap sandbox's own isolation end to end
  'test/cli/solve.test.ts', // `frognano solve` as a subprocess, 21 solves on bwrap
  'test/cli/verify.test.ts', // `frognano verify`: pytest before/after a change on bwrap
  'test/runner/processJob.test.ts', // 25 whole rounds on bwrap
  'test/runner/verifyRepair.test.ts', // rounds with verification and a repair turn on bwrap
  'test/runner/endToEnd.test.ts', // the runner's end-to-end scenarios on test/support/world.ts
  'test/runner/followUpEndToEnd.test.ts',
  'test/runner/ciFixEndToEnd.test.ts',
  'test/runner/waitingAsksEndToEnd.test.ts',
  // Whole rounds (processJob) in bwrap without the queue, 3 to 8 s each at load; moved from unit, where these five
  // were 101 s of the project's 525 s of worker time (load 8 on 2 cores).
  'test/runner/followUp.test.ts', // 12 follow-up rounds on the bot's pull request
  'test/runner/runPageLinks.test.ts', // 5 rounds storing run pages and linking them
  'test/runner/ciFix.test.ts', // 3 CI-fix rounds with bad GitHub answers
  'test/runner/closingKeywords.test.ts', // a first attempt and a follow-up round
  'test/runner/setupNetwork.test.ts', // 2 rounds whose setup command runs behind the egress proxy
  // PyTorch tracing and exporting a tiny Qwen3.5 four times (where a Python has torch): about 100 s of every core.
  'test/cli/modelExport.test.ts',
  // A browser: chromium driven by puppeteer, CPU-heavy and timing-sensitive.
  'test/runs/runPage.browser.test.ts',
  // Redis servers the test SIGKILLs, Sentinel failovers and a Cluster: timings of seconds (down-after 1 s,
  // failover 3 s) that a loaded machine stretches past their bounds.
  'test/queue/sentinelFailover.test.ts',
  'test/queue/cluster.test.ts',
  'test/runner/failover.test.ts',
  'test/app/redisOutage.test.ts',
  'test/app/main.test.ts', // `npm start` as a child process, one case against a Redis it kills
  // README.md's quick start on a fresh copy: `npm start` twice and `npm run runner` as child processes, a round on bwrap.
  'test/walkthrough/quickStart.test.ts',
  // Timed or measured in-process: a second busy worker (or another file's garbage in the same worker) moves the
  // figure past its bound. Seen failing in the unit project at load 16 on 2 cores.
  'test/security/linearText.test.ts', // defang() on 16 MiB of hostile text within a wall-clock bound
  'test/github/ciLogs.test.ts', // 320 MB of CI log streamed with a bound on heap growth
  'test/runs/runPageServing.test.ts', // a reader that stalls is cut after a short stall window; slots held by sockets
];
