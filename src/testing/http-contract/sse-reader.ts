/** Reads an SSE body incrementally; `until` waits for text matching a predicate. */
export function sseReader(response: Response) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  return {
    get text() {
      return text
    },
    async until(predicate: (text: string) => boolean) {
      while (!predicate(text)) {
        const { done, value } = await reader.read()
        if (done) throw new Error(`stream ended before the expected text; got:\n${text}`)
        text += decoder.decode(value, { stream: true })
      }
      return text
    },
    async rest() {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return text
        text += decoder.decode(value, { stream: true })
      }
    },
    cancel: () => reader.cancel(),
  }
}

/** The `id:` lines of an SSE text: the seqs of its event frames, in order. */
export const idsOf = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))

/** The data of the frame named `event` (`done`, `end`, `error`), parsed. */
export function namedFrame(text: string, event: string): any {
  const frame = text.split('\n\n').find((f) => f.startsWith(`event: ${event}\n`))
  if (!frame) throw new Error(`no "event: ${event}" frame in:\n${text}`)
  return JSON.parse(frame.slice(frame.indexOf('\ndata: ') + '\ndata: '.length))
}
