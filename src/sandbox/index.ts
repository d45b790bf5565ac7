/**
 * The sandbox's public surface: the stand-in provider server, what its callers need to talk to it
 * (its magic recipients, its signing), and where `parley serve` says it listens. The sandbox's
 * service (the helper behind POST /api/sandbox/inbound) is imported as `sandbox.service.ts`.
 */
export {
  type Sandbox,
  type SandboxInbound,
  type SandboxOptions,
  type SandboxRequest,
  startSandbox,
} from './sandbox.js';
export { clearSandboxAddress, readSandboxAddress, writeSandboxAddress } from './sandbox-address.js';
export { BUILT_IN_TEMPLATES, MAGIC_NUMBERS, PAIR_RATE_MS } from './sandbox-send-check.js';
export { providerJson, signBody } from './sandbox-wire.js';
