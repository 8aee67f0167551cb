import type { ClientError } from '../client/client-error.js'

/** Where the CLI writes and what it reads from its host; `bin.ts` passes the process's own. */
export interface CliIo {
  stdout: { write(text: string): unknown }
  stderr: { write(text: string): unknown }
  /** Environment (SKEIN_URL, SKEIN_TOKEN); default none. */
  env?: Record<string, string | undefined>
  /** Injected fetch for the HTTP commands (tests); default the global fetch. */
  fetch?: (request: Request) => Promise<Response>
  /** Aborting it ends long-running commands (`serve`, `events --follow`); bin.ts wires SIGINT. */
  signal?: AbortSignal
  /** Base directory for relative paths (`serve --db`, module paths); default process.cwd(). */
  cwd?: string
  /** Called once `serve` listens (tests learn the port from it). */
  onListening?: (info: { url: string; db: string }) => void
}

/** A failure the CLI reports as one line on stderr, then exits non-zero. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message)
    this.name = 'CliError'
  }
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}/

/** An option's time: epoch ms, or an ISO 8601 time. */
export function parseTime(name: string, text: string): number {
  const at = /^\d+$/.test(text) ? Number(text) : ISO_DATE.test(text) ? Date.parse(text) : Number.NaN
  if (!Number.isSafeInteger(at) || at < 0) {
    throw new CliError(`${name} must be an ISO 8601 time or epoch ms, got "${text}"`)
  }
  return at
}

/** The exit code of a usage error: an unknown command or option, a missing or conflicting argument. */
export const USAGE_EXIT_CODE = 2

/** A usage error the CLI checks itself (arguments that go together or exclude each other). */
export function usageError(message: string): CliError {
  return new CliError(message, USAGE_EXIT_CODE)
}

/** One clear line for any error: a server's code and message, or why it was unreachable. */
export function describeError(error: unknown, url?: string): string {
  if (error instanceof CliError) return error.message
  const e = error as ClientError
  if (e && typeof e === 'object' && e.name === 'ClientError') {
    if (e.status === 0) {
      const cause = (e.cause as { cause?: { code?: string; message?: string } })?.cause
      const why = cause?.code ?? cause?.message ?? e.message
      return `cannot reach the Skein server at ${url ?? 'the given url'}: ${why}`
    }
    return `${e.code}: ${e.message} (HTTP ${e.status})`
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return typeof code === 'string' && /^[A-Z_]+$/.test(code)
      ? `${code}: ${error.message}`
      : error.message
  }
  return String(error)
}

/** Parses a JSON option, naming the option when it is not JSON. */
export function parseJsonOption(name: string, text: string | undefined): unknown {
  if (text === undefined) return undefined
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new CliError(`${name} is not valid JSON: ${(error as Error).message}`)
  }
}

/** Parses a non-negative integer argument or option. */
export function parseCount(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  if (!/^\d+$/.test(text))
    throw new CliError(`${name} must be a non-negative integer, got "${text}"`)
  return Number(text)
}

/** `text` with the password of every URL in it shown as `***` (a `--url` or `--store` with credentials). */
export function maskPasswords(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:)[^/\s@]*@/gi, '$1***@')
}
