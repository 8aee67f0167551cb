// A page's data read from one route and read again every `everyMs` while the page is open,
// a failed read shown and retried on the same beat (the Queues and Versions pages).
import { useEffect, useState } from 'preact/hooks'
import { api } from './api.js'

/** `{ body, error }`: the last body read (null until the first) and the last read's failure. */
export function usePolled(path, everyMs) {
  const [body, setBody] = useState(null)
  const [error, setError] = useState('')
  useEffect(() => {
    const controller = new AbortController()
    let timer
    const read = () =>
      api(path, { signal: controller.signal }).then(
        (next) => {
          setError('')
          setBody(next)
          timer = setTimeout(read, everyMs)
        },
        (failure) => {
          if (failure.name === 'AbortError') return
          setError(`${failure.code ?? 'ERROR'}: ${failure.message}`)
          timer = setTimeout(read, everyMs)
        },
      )
    read()
    return () => {
      controller.abort()
      clearTimeout(timer)
    }
  }, [path, everyMs])
  return { body, error }
}
