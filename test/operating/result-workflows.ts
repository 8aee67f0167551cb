// Workflows the result tests drive: one waits for a signal and returns what it carried, one
// fails once signalled.
import { defineWorkflow } from 'skein/workflow'

export const waits = defineWorkflow({
  name: 'waits',
  nodes: {
    go: { run: (ctx) => ctx.waitFor('app.go') },
  },
})

export const breaks = defineWorkflow({
  name: 'breaks',
  nodes: {
    go: { run: (ctx) => ctx.waitFor('app.go') },
    boom: {
      after: ['go'],
      run: () => {
        throw new Error('the provider is down')
      },
    },
  },
})
