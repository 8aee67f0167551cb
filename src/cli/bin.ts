#!/usr/bin/env node
// The `skein` executable: the only place that reads process.argv, env and signals.
import { runCli } from './run-cli.js'

const controller = new AbortController()
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => controller.abort())
}
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
})
// Nothing to wait for after the command settled (an SSE reconnect timer, say).
process.exit()
