// What the debugger serves, read over HTTP without a browser: content types, cache headers, the
// Content-Security-Policy, and that nothing refers to another origin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { review } from '../../examples/demo-definitions.js'
import { debuggerUi } from '../../src/debugger/index.js'
import { createEngine, type Engine, type ServerHandle } from '../../src/index.js'
import { workflow } from '../../src/modules/workflow/index.js'
import { parked } from './host.js'

let engine: Engine
let server: ServerHandle
beforeAll(async () => {
  engine = createEngine({
    modules: [workflow({ definitions: [review, parked] })],
    debugger: { basePath: '/_skein', ui: debuggerUi({ title: 'Ops <debugger>' }) },
  })
  server = await engine.serve({ port: 0 })
})
afterAll(() => engine.stop())

const get = (path: string, init?: RequestInit) => fetch(server.url + path, init)

describe('debuggerUi serving', () => {
  it('serves the page with a strict CSP that allows only its own scripts and the import map', async () => {
    for (const path of ['/_skein', '/_skein/']) {
      const page = await get(path)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(page.headers.get('cache-control')).toBe('no-cache')
      expect(page.headers.get('x-content-type-options')).toBe('nosniff')
      const csp = page.headers.get('content-security-policy')!
      expect(csp).toMatch(/default-src 'none'/)
      expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'(;|$)/)
      expect(csp).toMatch(/connect-src 'self'(;|$)/)
      expect(csp).toMatch(/frame-ancestors 'none'/)
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/)
      const html = await page.text()
      // The title is escaped, and nothing points at another origin.
      expect(html).toContain('<title>Ops &lt;debugger&gt;</title>')
      expect(html).not.toMatch(/https?:\/\//)
      // The only inline script is the import map, whose hash the policy names.
      const map = /<script type="importmap">(.*?)<\/script>/.exec(html)![1]
      const { createHash } = await import('node:crypto')
      expect(csp).toContain(`'sha256-${createHash('sha256').update(map).digest('base64')}'`)
      expect(html.match(/<script/g)).toHaveLength(2)
    }
  })

  it('serves hashed assets as immutable with the right content types, and 404s anything else', async () => {
    const html = await (await get('/_skein/')).text()
    const base = /href="(\/_skein\/assets\/[0-9a-f]{16})\/app\.css"/.exec(html)![1]
    const expectations: Array<[string, string]> = [
      ['app.js', 'text/javascript; charset=utf-8'],
      ['app.css', 'text/css; charset=utf-8'],
      ['vendor/preact.mjs', 'text/javascript; charset=utf-8'],
      ['vendor/preact-hooks.mjs', 'text/javascript; charset=utf-8'],
      ['vendor/htm.mjs', 'text/javascript; charset=utf-8'],
    ]
    for (const [file, type] of expectations) {
      const asset = await get(`${base}/${file}`)
      expect(asset.status, file).toBe(200)
      expect(asset.headers.get('content-type'), file).toBe(type)
      expect(asset.headers.get('cache-control'), file).toBe('public, max-age=31536000, immutable')
      expect(await asset.text(), file).not.toMatch(/https?:\/\/(?!www\.w3\.org)/)
    }
    for (const path of [
      '/_skein/assets/0000000000000000/app.js',
      `${base}/nope.js`,
      '/_skein/elsewhere',
    ]) {
      const missing = await get(path)
      expect(missing.status, path).toBe(404)
      expect(missing.headers.get('cache-control'), path).toBe('no-store')
    }
    // Dot segments resolve before routing: this is /package.json, outside the debugger and the API.
    expect((await get(`${base}/../../../package.json`)).status).toBe(404)
    expect((await get('/_skein/', { method: 'POST' })).status).toBe(405)
    const head = await get(`${base}/app.js`, { method: 'HEAD' })
    expect(head.status).toBe(200)
  })

  it('describes the registered workflows as graphs, without schemas or code', async () => {
    const answer = await (await get('/_skein/definitions.json')).json()
    const found = answer.definitions.find((d: { name: string }) => d.name === 'review')
    expect(found).toEqual({
      kind: 'workflow',
      name: 'review',
      version: 'v1',
      nodes: [
        { id: 'draft', after: [], conditional: false },
        { id: 'approve', after: ['draft'], conditional: false },
        { id: 'publish', after: ['approve'], conditional: true },
      ],
    })
  })
})
