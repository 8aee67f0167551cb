import { isLogLevel, type LogFn, type Logger, type LogLevel, levelEnabled } from './logger.js'

export interface ConsoleLoggerOptions {
  /** `'pretty'` (default): one readable line per entry; `'json'`: JSON lines (pino-like). */
  format?: 'pretty' | 'json'
  /** Entries below this level are dropped. Default `'info'`. */
  level?: LogLevel
  /** Where lines go. Default: standard output. */
  write?: (line: string) => void
  /** The time of an entry (tests inject one). Default: the system clock. */
  now?: () => number
}

/**
 * A small logger for hosts (`npm start`, `skein serve` use it): pretty lines or JSON lines.
 * Any pino-compatible logger works in its place.
 *
 * @example
 * const engine = createEngine({ modules, store, logger: consoleLogger({ format: 'json' }) })
 * // {"time":"2026-11-24T10:00:00.000Z","level":"info","msg":"engine ready","scheduled":2,"dueNow":1}
 */
export function consoleLogger(options: ConsoleLoggerOptions = {}): Logger {
  const format = options.format ?? 'pretty'
  const threshold = options.level ?? 'info'
  if (format !== 'pretty' && format !== 'json') {
    throw new TypeError(`consoleLogger: format must be 'pretty' or 'json', got ${String(format)}`)
  }
  if (!isLogLevel(threshold)) {
    throw new TypeError(`consoleLogger: level must be debug, info, warn or error`)
  }
  const write = options.write ?? ((line: string) => process.stdout.write(line))
  const now = options.now ?? Date.now
  const entry =
    (level: LogLevel): LogFn =>
    (fields, message) => {
      if (!levelEnabled(level, threshold)) return
      const time = new Date(now()).toISOString()
      write(
        format === 'json'
          ? `${JSON.stringify({ time, level, msg: message ?? '', ...fields })}\n`
          : `${time} ${level.toUpperCase().padEnd(5)} ${message ?? ''}${prettyFields(fields)}\n`,
      )
    }
  return { debug: entry('debug'), info: entry('info'), warn: entry('warn'), error: entry('error') }
}

/** ` key=value` pairs; strings with spaces or quotes are JSON-quoted. */
function prettyFields(fields: Record<string, unknown>): string {
  let out = ''
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue
    const text = typeof value === 'string' ? value : JSON.stringify(value)
    out += ` ${key}=${typeof value === 'string' && /[\s"=]/.test(value) ? JSON.stringify(value) : text}`
  }
  return out
}
