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
})
