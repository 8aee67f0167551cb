/**
 * The one pipe between an SSE stream's logic (sse-stream.ts, stream-start.ts) and whoever
 * consumes it. The logic writes frames to a `FrameSink` and never learns which consumer is on
 * the other end: a Web reader of the Response body (`http.fetch`), or the Node response itself
 * when `serve` claims the stream (node-write.ts), which saves a web-stream hop per frame.
 * Frames written before a consumer arrives queue here, as they did in the Web stream's queue.
 */
export interface FrameSink {
  /** Queues a frame; false when the consumer has not taken everything queued (it is behind). */
  write(frame: Uint8Array): boolean
  /** Frames written since the consumer fell behind, beyond what its transport absorbs. */
  backlog(): number
  /** Bytes written that the consumer's transport has not taken yet (memory this stream holds). */
  bufferedBytes(): number
  /** Ends the stream once the frames already written have gone out. */
  end(): void
  /** Ends the stream now, discarding frames not taken yet (a consumer that stopped reading). */
  destroy(): void
}

/**
 * What the stream logic offers its consumer. The consumer says when it starts reading and
 * each time it has taken everything written (`drained`); the logic decides what to write then
 * (the next catch-up page), so the same pacing holds on both paths.
 */
export interface FrameSource {
  /** The consumer attached and reads from now on. */
  start?(): void
  /** The consumer has taken everything written so far. */
  drained?(): void
  /** The consumer went away: the reader cancelled or the socket closed. */
  cancel(): void
}

/** A consumer's hold on a stream: it attaches its sink once, then reports drains. */
export interface FrameTap {
  attach(sink: FrameSink): void
  start(): void
  drained(): void
  cancel(): void
}

const TAP = Symbol('skein.frameTap')
type Tapped = Response & { [TAP]?: () => FrameTap | undefined }

/**
 * A streaming Response over `source`, plus the sink its logic writes to. Read as a Web body,
 * it attaches on the first read; `claimFrameTap` hands it to another consumer instead.
 */
export function createFrameStream(
  source: FrameSource,
  init: { status: number; headers: Readonly<Record<string, string>> },
): { sink: FrameSink; response: Response } {
  let consumer: FrameSink | undefined
  let claimed = false
  let queued: Uint8Array[] = []
  let queuedBytes = 0
  let ended = false

  // Frames written before a consumer attaches wait here; nobody could have read them yet, so
  // they do not count as the consumer falling behind.
  const sink: FrameSink = {
    write(frame) {
      if (consumer) return consumer.write(frame)
      queued.push(frame)
      queuedBytes += frame.byteLength
      return true
    },
    backlog: () => (consumer ? consumer.backlog() : 0),
    bufferedBytes: () => (consumer ? consumer.bufferedBytes() : queuedBytes),
    end() {
      if (consumer) consumer.end()
      else ended = true
    },
    destroy() {
      if (consumer) return consumer.destroy()
      queued = []
      queuedBytes = 0
      ended = true
    },
  }
  const attach = (next: FrameSink) => {
    consumer = next
    for (const frame of queued) next.write(frame)
    queued = []
    queuedBytes = 0
    if (ended) next.end()
  }

  let web: FrameSink | undefined
  const body = new ReadableStream<Uint8Array>(
    {
      // highWaterMark 0: nothing is pulled, so nothing attaches, until someone reads. A pull
      // means the reader has taken every queued frame and wants more.
      pull(controller) {
        if (web) return source.drained?.()
        if (claimed) return controller.close()
        claimed = true
        web = webSink(controller)
        attach(web)
        source.start?.()
      },
      cancel() {
        // Cancelling the unread body of a stream another consumer claimed ends nothing.
        if (web || !claimed) source.cancel()
      },
    },
    // Sized in bytes, so desiredSize is minus the bytes the reader has not taken.
    { highWaterMark: 0, size: (chunk) => chunk.byteLength },
  )
  const response: Tapped = new Response(body, init)
  response[TAP] = () => {
    if (claimed) return undefined
    claimed = true
    return {
      attach,
      start: () => source.start?.(),
      drained: () => source.drained?.(),
      cancel: () => source.cancel(),
    }
  }
  return { sink, response }
}

/** Takes over a stream made by `createFrameStream`, unless it is not one or is taken. */
export function claimFrameTap(response: Response): FrameTap | undefined {
  return (response as Tapped)[TAP]?.()
}

function webSink(controller: ReadableStreamDefaultController<Uint8Array>): FrameSink {
  const queuedBytes = () => Math.max(0, -(controller.desiredSize ?? 0))
  // Sizes of the frames still queued, oldest first: the reader takes from the front.
  const sizes: number[] = []
  let head = 0
  let total = 0
  const queuedFrames = () => {
    const left = queuedBytes()
    while (total > left && head < sizes.length) total -= sizes[head++]
    if (head === sizes.length) sizes.length = head = 0
    return sizes.length - head
  }
  return {
    write(frame) {
      controller.enqueue(frame)
      if (queuedBytes() === 0) return true
      queuedFrames()
      sizes.push(frame.byteLength)
      total += frame.byteLength
      return false
    },
    backlog: queuedFrames,
    bufferedBytes: queuedBytes,
    end() {
      try {
        controller.close()
      } catch {
        // Already cancelled by the reader.
      }
    },
    destroy() {
      try {
        controller.error(new Error('event stream dropped: the reader stopped reading'))
      } catch {
        // Already closed or cancelled.
      }
    },
  }
}
