// The official kip-mcp-server, unchanged, in front of kip-server: an MCP
// client (the MCP TypeScript SDK's) starts `node dist/index.js` over stdio
// with KIP_BACKEND_URL pointing at kip-server's /kip, and calls its tools.
//
//   node kip_mcp_server_check.mjs http://127.0.0.1:PORT/kip API_KEY
//
// Run from the built kip-mcp-server directory (so the SDK resolves from its
// node_modules). Exits non-zero on the first failed check.
import assert from 'node:assert/strict'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'

const [backendUrl, apiKey] = process.argv.slice(2)

async function connect(key) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['dist/index.js'],
    env: { ...process.env, KIP_BACKEND_URL: backendUrl, KIP_API_KEY: key }
  })
  const client = new Client({ name: 'kip-gateway-check', version: '0.0.0' })
  await client.connect(transport)
  return client
}

const text = (r) => r.content.map((c) => c.text ?? '').join('\n')

const client = await connect(apiKey)
const tools = (await client.listTools()).tools.map((t) => t.name)
for (const name of ['execute_kip', 'execute_kip_readonly', 'list_logs']) {
  assert.ok(tools.includes(name), `tool ${name} missing: ${tools}`)
}

const primer = await client.callTool({ name: 'execute_kip', arguments: { command: 'DESCRIBE PRIMER' } })
assert.ok(!primer.isError, text(primer))
const envelope = JSON.parse(text(primer))
assert.ok(envelope.result.identity && envelope.result.domain_map, 'DESCRIBE PRIMER envelope')

const write = await client.callTool({
  name: 'execute_kip',
  arguments: {
    command: 'UPSERT { CONCEPT ?p { {type: "Person", name: :name} SET ATTRIBUTES { role: :role } } }',
    parameters: { name: 'mcp_server_marker', role: 'tester' }
  }
})
assert.ok(!write.isError, text(write))

const read = await client.callTool({
  name: 'execute_kip_readonly',
  arguments: {
    commands: [
      { command: 'FIND(?p.attributes.role) WHERE { ?p {type: "Person", name: :name} }', parameters: { name: 'mcp_server_marker' } }
    ]
  }
})
assert.ok(!read.isError, text(read))
assert.deepEqual(JSON.parse(text(read)).result[0].result, ['tester'])

// A KIP error: the tool fails with the HTTP status and the envelope in its text.
const failed = await client.callTool({ name: 'execute_kip', arguments: { command: 'FIND(' } })
assert.equal(failed.isError, true)
assert.match(text(failed), /HTTP 400/)
assert.match(text(failed), /KIP_1001/)

const protectedDelete = await client.callTool({
  name: 'execute_kip',
  arguments: { command: 'DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Domain", name: "CoreSchema"} }' }
})
assert.equal(protectedDelete.isError, true)
assert.match(text(protectedDelete), /HTTP 403/)
assert.match(text(protectedDelete), /KIP_3004/)

const logs = await client.callTool({ name: 'list_logs', arguments: { limit: 5 } })
assert.ok(!logs.isError, text(logs))
const page = JSON.parse(text(logs))
assert.ok(Array.isArray(page.result) && page.result.length > 0, text(logs))
await client.close()

// A wrong key: 401, reported to the agent.
const intruder = await connect('not-the-key')
const denied = await intruder.callTool({ name: 'execute_kip', arguments: { command: 'DESCRIBE PRIMER' } })
assert.equal(denied.isError, true)
assert.match(text(denied), /HTTP 401/)
await intruder.close()

console.log('kip-mcp-server against kip-server: tools/list, execute_kip, execute_kip_readonly, KIP errors (400, 403), list_logs, wrong key (401): ok')
