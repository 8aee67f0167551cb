// The `--debugger <path>` / `--no-debugger` option of `skein serve` and `skein actor`: both
// serve the debugger (docs/debugger.md) by default and print its URL in their banner.
import type { Command } from 'commander'
import { debuggerUi } from '../debugger/index.js'
import { validateDebuggerHost } from '../http/debugger-path.js'
import type { DebuggerHost } from '../http/http-options.js'
import { CliError } from './io.js'

export const DEFAULT_DEBUGGER_PATH = '/_skein'

export function addDebuggerOption(command: Command): Command {
  return command
    .option('--debugger <path>', 'serve the debugger under this path', DEFAULT_DEBUGGER_PATH)
    .option('--no-debugger', 'serve no debugger')
}

/** The host's `debugger` option from `--debugger`, or undefined with `--no-debugger`. */
export function debuggerOf(option: string | boolean): DebuggerHost | undefined {
  if (option === false) return undefined
  const host = { basePath: option === true ? DEFAULT_DEBUGGER_PATH : option, ui: debuggerUi() }
  try {
    validateDebuggerHost(host)
  } catch (error) {
    throw new CliError(`--debugger: ${(error as Error).message}`)
  }
  return host
}

/** The banner line: where the debugger is, or nothing. */
export const debuggerLine = (url: string, host: DebuggerHost | undefined): string =>
  host ? `  debugger ${url}${host.basePath.replace(/\/+$/, '')}/\n` : ''
