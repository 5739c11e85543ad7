/**
 * The docker sandbox: DockerSandbox (sandbox.ts) runs each job in one container described by containerSpec.ts,
 * with the in-container programs init.py, sweep.sh and exec-wrapper.sh (programs.ts); engine.ts says what is wrong
 * with the engine or image; reaper.ts removes containers a crashed runner left behind.
 */
export { DockerSandbox } from './sandbox.js';
export { CONTAINER_WORKDIR, SANDBOX_LABEL } from './containerSpec.js';
export { ensureDockerImage, imageBuildHint, SandboxUnavailableError } from './engine.js';
export { reapStaleSandboxes } from './reaper.js';
