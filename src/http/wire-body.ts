/**
 * The serialized JSON body of a Response built by `jsonResponse`, kept next to it so the Node
 * server can write the string to the socket instead of reading it back out of the Response's
 * Web stream (that read is most of a small request's cost). The Response itself stays a normal
 * readable Response for `http.fetch` users; the server only uses the text while `bodyUsed` is
 * false, and reads status and headers from the Response at write time.
 */
const WIRE_BODY = Symbol('skein.wireBody')

type WithWireBody = Response & { [WIRE_BODY]?: string }

export function attachWireBody(response: Response, text: string): Response {
  const tagged: WithWireBody = response
  tagged[WIRE_BODY] = text
  return response
}

/** The text `response` was built from, unless its body has been read since. */
export function wireBodyOf(response: Response): string | undefined {
  const text = (response as WithWireBody)[WIRE_BODY]
  return text === undefined || response.bodyUsed ? undefined : text
}
