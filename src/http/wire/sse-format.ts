/**
 * The one owner of Skein's server-sent-event wire format (docs/http.md, "Server-sent events"), shared by the server
 * (`src/http`) and the client parser (`src/client`). It imports nothing so the client can
 * use it without pulling in the server.
 *
 * A stream starts with `retry: 1000` and a `: connected` comment; each event is
 * `id: <seq>` + `data: <EventEnvelope JSON>` + a blank line; `: keepalive` comments keep
 * idle connections open; a finished run's live stream ends with `event: end` (data
 * `{ runId, status, lastSeq }`); a streaming start ends with `event: done` or `event: error`.
 */

export const SSE_CONTENT_TYPE = 'text/event-stream'
export const SSE_RETRY_MS = 1000
export const SSE_KEEPALIVE_MS = 15_000

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': `${SSE_CONTENT_TYPE}; charset=utf-8`,
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  // Tells buffering proxies (nginx) to pass frames through as they are written.
  'x-accel-buffering': 'no',
}

export const SSE_PREAMBLE = `retry: ${SSE_RETRY_MS}\n: connected\n\n`
export const SSE_KEEPALIVE = ': keepalive\n\n'

/** One frame per event. JSON.stringify never emits a raw newline, so one data line suffices. */
export function formatEventFrame(seq: number, event: unknown): string {
  return `id: ${seq}\ndata: ${JSON.stringify(event)}\n\n`
}

/** The data of the `end` frame that closes a finished run's live stream. */
export interface StreamEnd {
  runId: string
  status: 'completed' | 'failed' | 'cancelled'
  /** The last seq the stream covered: a resume after it has nothing more of this run's end. */
  lastSeq: number
}

/**
 * A named frame (`end`, `done`, `error`, `transient`) that carries no id, so it never moves
 * the resume cursor.
 */
export function formatNamedFrame(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`
}

export interface SseFrame {
  /** `message` unless the frame named another event. */
  event: string
  data: string
  /** The `id:` of this frame, when it had one. */
  id?: string
}

export interface SseParser {
  /** Feeds decoded text; frames are dispatched as their blank line arrives. */
  push(text: string): void
  /** The last `retry:` value the server sent, if any. */
  readonly retryMs: number | undefined
}

/**
 * A WHATWG-conformant event-stream parser (CR, LF and CRLF line ends; comments ignored;
 * a frame without data is not dispatched).
 */
export function createSseParser(onFrame: (frame: SseFrame) => void): SseParser {
  let carry = ''
  let pendingCr = false
  let event = ''
  let data: string[] = []
  let id: string | undefined
  let retryMs: number | undefined

  const dispatch = () => {
    if (data.length > 0) {
      const frame: SseFrame = { event: event || 'message', data: data.join('\n') }
      if (id !== undefined) frame.id = id
      onFrame(frame)
    }
    event = ''
    data = []
    id = undefined
  }

  const line = (text: string) => {
    if (text === '') return dispatch()
    if (text.charCodeAt(0) === 58) return // ':' comment
    const colon = text.indexOf(':')
    const field = colon === -1 ? text : text.slice(0, colon)
    let value = colon === -1 ? '' : text.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    if (field === 'data') data.push(value)
    else if (field === 'event') event = value
    else if (field === 'id') {
      if (!value.includes('\0')) id = value
    } else if (field === 'retry' && /^\d+$/.test(value)) retryMs = Number(value)
  }

  return {
    push(text) {
      let start = 0
      let i = 0
      if (pendingCr && text.charCodeAt(0) === 10) start = i = 1
      pendingCr = false
      for (; i < text.length; i++) {
        const c = text.charCodeAt(i)
        if (c !== 10 && c !== 13) continue
        line(carry + text.slice(start, i))
        carry = ''
        if (c === 13) {
          if (i + 1 === text.length) pendingCr = true
          else if (text.charCodeAt(i + 1) === 10) i++
        }
        start = i + 1
      }
      carry += text.slice(start)
    },
    get retryMs() {
      return retryMs
    },
  }
}
