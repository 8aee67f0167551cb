import { createSseParser, type SseFrame } from '../http/wire/sse-format.js'

/**
 * Reads an event-stream body frame by frame with the shared parser. Resolves when the body
 * ends; rejects when the connection fails (or the request's signal aborts).
 */
export async function readFrames(
  body: ReadableStream<Uint8Array>,
  onFrame: (frame: SseFrame) => void,
): Promise<void> {
  const parser = createSseParser(onFrame)
  const decoder = new TextDecoder()
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      parser.push(decoder.decode(value, { stream: true }))
    }
    parser.push(decoder.decode())
  } catch (error) {
    // A throwing consumer or a dropped connection: release the socket either way.
    reader.cancel().catch(() => {})
    throw error
  }
}
