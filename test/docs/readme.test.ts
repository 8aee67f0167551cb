import { readFileSync } from 'node:fs'
import { createEngine } from 'skein'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'

describe('README quickstart', () => {
  it('runs as written: parks on the gate, completes after approval', async () => {
    const release = defineWorkflow({
      name: 'release',
      nodes: {
        draft: { run: ({ input }) => ({ text: `About ${input.topic}` }) },
        review: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
        publish: {
          after: ['review'],
          when: ({ results }) => results.review.outcome === 'approve',
          run: ({ results }) => ({ published: results.draft.text }),
        },
      },
    })
    const engine = createEngine({ modules: [workflow({ definitions: [release] }), approval()] })
    const { runId, state } = await engine.start(release, { topic: 'Skein' })
    const [item] = (await engine.project(runId, pendingApprovals)).items
    const done = await engine.signal(runId, [decision(item.approvalId, 'approve')])
    expect(state.status).toBe('running')
    expect(done.status).toBe('completed')
    expect((done.output as any).publish).toEqual({ published: 'About Skein' })
    await engine.stop()
  })

  it('the README shows the two commands and links only docs that exist', () => {
    const readme = readFileSync('README.md', 'utf8')
    expect(readme).toContain('npm start')
    expect(readme).toContain('npm test')
    for (const [, path = '', anchor] of readme.matchAll(/\]\((docs\/[^)#]+)(?:#([^)]+))?\)/g)) {
      expect(() => readFileSync(path, 'utf8'), path).not.toThrow()
      // An anchor names a heading of that file (GitHub's slug: lower case, spaces to dashes).
      if (anchor) {
        const slugs = [...readFileSync(path, 'utf8').matchAll(/^#+ (.+)$/gm)].map(
          ([, title = '']) =>
            title
              .toLowerCase()
              .replace(/[^\w\s-]/g, '')
              .replace(/\s/g, '-'),
        )
        expect(slugs, `${path}#${anchor}`).toContain(anchor)
      }
    }
  })

  it('names every subpath the package exports and every optional peer dependency', () => {
    const readme = readFileSync('README.md', 'utf8')
    const pkg = JSON.parse(readFileSync('package.json', 'utf8'))
    const subpaths = Object.keys(pkg.exports)
      .filter((key) => key !== './package.json')
      .map((key) => (key === '.' ? 'skein' : `skein/${key.slice(2)}`))
    for (const subpath of subpaths) expect(readme, subpath).toContain(`\`${subpath}\``)
    for (const peer of Object.keys(pkg.peerDependenciesMeta)) {
      expect(readme, peer).toContain(`\`${peer}\``)
    }
  })

  it('docs/cli.md documents every command of the CLI', () => {
    const cli = readFileSync('docs/cli.md', 'utf8')
    const sources = [
      'client-commands',
      'serve-command',
      'actor-command',
      'schedule-commands',
      'operator-commands',
    ]
    for (const file of sources) {
      const source = readFileSync(`src/cli/${file}.ts`, 'utf8')
      for (const [, name] of source.matchAll(/program\s*\.command\('([a-z-]+)'/g)) {
        expect(cli, name).toMatch(new RegExp(`\`(skein )?${name}[ \`]`))
      }
    }
  })
})
