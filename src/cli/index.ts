export { CliError, type CliIo } from './io.js'
export { runCli } from './run-cli.js'
