import { createRequire } from 'node:module'
import { Command, CommanderError } from 'commander'
import { registerActorCommand } from './actor-command.js'
import { registerClientCommands } from './client-commands.js'
import { CliError, type CliIo, describeError, maskPasswords, USAGE_EXIT_CODE } from './io.js'
import { registerMigrateCommand } from './migrate-command.js'
import { registerOperatorCommands } from './operator-commands.js'
import { registerRestoreCommand } from './restore-command.js'
import { registerScheduleCommands } from './schedule-commands.js'
import { registerServeCommand } from './serve-command.js'

// src/cli/ and dist/cli/ are both two levels below the package root.
const { version } = createRequire(import.meta.url)('../../package.json') as { version: string }

/**
 * The `skein` command, testable without a process: parses `argv` (without node and the script
 * path), writes to `io`, and resolves with the exit code. Errors are one line on stderr and a
 * non-zero code; `--json` makes successful output machine-readable.
 *
 * @example
 * const code = await runCli(['runs', '--json'], { stdout: process.stdout, stderr: process.stderr })
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const program = new Command('skein')
    .description('Skein: durable, event-logged runs. Serve a host, or talk to one over HTTP.')
    .version(version, '-V, --version', 'print the version')
    .option('--url <url>', 'server url (env SKEIN_URL, default http://127.0.0.1:8787)')
    .option('--token <token>', 'bearer token (env SKEIN_TOKEN); `serve` requires it on every route')
    .option('--json', 'machine-readable output')
    .showHelpAfterError('(run skein --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => write(text),
    })
  registerServeCommand(program, io)
  registerActorCommand(program, io)
  registerClientCommands(program, io)
  registerOperatorCommands(program, io)
  registerScheduleCommands(program, io)
  registerRestoreCommand(program, io)
  registerMigrateCommand(program, io)
  for (const command of program.commands) {
    command.exitOverride().configureOutput(program.configureOutput())
  }
  try {
    await program.parseAsync([...argv], { from: 'user' })
    return 0
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander already printed its message (or the help / version).
      return error.exitCode === 0 ? 0 : USAGE_EXIT_CODE
    }
    io.stderr.write(`skein: ${maskPasswords(describeError(error))}\n`)
    return error instanceof CliError ? error.exitCode : 1
  }
}
