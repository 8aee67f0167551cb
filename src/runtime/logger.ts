/** One log call: structured fields first, then a message (pino's argument order). */
export type LogFn = (fields: Record<string, unknown>, message?: string) => void

/**
 * What `createEngine({ logger })` takes: pino, a pino child, `console`, or `consoleLogger()`
 * from `skein`. Methods are called on the object (`logger.warn(fields, message)`), so pino's
 * prototype methods keep their `this`.
 */
export interface Logger {
  debug: LogFn
  info: LogFn
  warn: LogFn
  error: LogFn
}

const LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LEVELS)[number]

const nothing: LogFn = () => {}

/** The library's default: it prints nothing unless given a logger. */
export const silentLogger: Logger = Object.freeze({
  debug: nothing,
  info: nothing,
  warn: nothing,
  error: nothing,
})

/**
 * The engine's view of a user's logger: a logger that throws never affects a run (like an
 * observer), and a missing method logs nothing. Checked at creation: a value that has none of
 * the four methods is a mistake, not a silent logger.
 */
export function engineLogger(logger: Logger | undefined): Logger {
  if (logger === undefined) return silentLogger
  if (typeof logger !== 'object' || logger === null || !LEVELS.some((l) => isFn(logger[l]))) {
    throw new TypeError(
      'createEngine: logger must have debug, info, warn and error methods (pino, console or consoleLogger())',
    )
  }
  const guarded = (level: LogLevel): LogFn => {
    if (!isFn(logger[level])) return nothing
    return (fields, message) => {
      try {
        logger[level](fields, message)
      } catch {
        // A logger never affects a run.
      }
    }
  }
  return {
    debug: guarded('debug'),
    info: guarded('info'),
    warn: guarded('warn'),
    error: guarded('error'),
  }
}

const isFn = (value: unknown): value is LogFn => typeof value === 'function'

/** Whether `level` is printed by a logger set to `threshold`. */
export const levelEnabled = (level: LogLevel, threshold: LogLevel): boolean =>
  LEVELS.indexOf(level) >= LEVELS.indexOf(threshold)

export const isLogLevel = (value: unknown): value is LogLevel => LEVELS.includes(value as LogLevel)

/** An error as log fields: its code and message, never a stack. */
export function errorFields(error: unknown): { code: string; message: string } {
  const e = error as { code?: unknown; message?: unknown } | undefined
  const code = typeof e?.code === 'string' ? e.code : 'ERROR'
  const message = typeof e?.message === 'string' ? e.message : String(error)
  return { code, message }
}
