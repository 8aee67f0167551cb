/**
 * The one pipe between an SSE stream's logic (sse-stream.ts, stream-start.ts) and whoever
 * consumes it. The logic writes frames to a `FrameSink` and never learns which consumer is on
 * the other end: a Web reader of the Response body (`http.fetch`), or the Node response itself
 * when `serve` claims the stream (node-write.ts), which saves a web-stream hop per frame.
 * Frames written before a consumer arrives queue here, as they did in the Web stream's queue.
 */
export interface FrameSink {
  write(frame: Uint8Array): void
  /** Frames written that the consumer has not taken yet, beyond what its transport absorbs. */
  backlog(): number
  /** Ends the stream once the frames already written have gone out. */
  end(): void
}

/** What the stream logic offers its consumer. */
export interface FrameSource {
  /** Called when the consumer wants more (catch-up pages); resolves true while more remain. */
  pull?(): Promise<boolean>
  /** The consumer went away: the reader cancelled or the socket closed. */
  cancel(): void
}

/** A consumer's hold on a stream: it attaches its sink once, then pulls until told to stop. */
export interface FrameTap extends FrameSource {
  attach(sink: FrameSink): void
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
  let ended = false

  const sink: FrameSink = {
    write(frame) {
      if (consumer) consumer.write(frame)
      else queued.push(frame)
    },
    backlog: () => (consumer ? consumer.backlog() : queued.length),
    end() {
      if (consumer) consumer.end()
      else ended = true
    },
  }
  const attach = (next: FrameSink) => {
    consumer = next
    for (const frame of queued) next.write(frame)
    queued = []
    if (ended) next.end()
  }

  let web: FrameSink | undefined
  const body = new ReadableStream<Uint8Array>(
    {
      // highWaterMark 0: nothing is pulled, so nothing attaches, until someone reads.
      async pull(controller) {
        if (!web) {
          if (claimed) return controller.close()
          claimed = true
          web = webSink(controller)
          attach(web)
        }
        await source.pull?.()
      },
      cancel() {
        // Cancelling the unread body of a stream another consumer claimed ends nothing.
        if (web || !claimed) source.cancel()
      },
    },
    { highWaterMark: 0 },
  )
  const response: Tapped = new Response(body, init)
  response[TAP] = () => {
    if (claimed) return undefined
    claimed = true
    const { pull } = source
    return {
      attach,
      pull: pull && (() => pull.call(source)),
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
  return {
    write: (frame) => controller.enqueue(frame),
    // With highWaterMark 0 this is the number of frames queued for the reader.
    backlog: () => -(controller.desiredSize ?? 0),
    end() {
      try {
        controller.close()
      } catch {
        // Already cancelled by the reader.
      }
    },
  }
}
