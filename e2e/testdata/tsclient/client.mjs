// client.mjs drives switchboard with a TypeScript SDK client and prints
// one JSON line: the protocol it negotiated and each step's outcome.
//
//   node client.mjs <v1|v2> <auto|legacy> <url | stdio> [command args...]
//
// v2 is @modelcontextprotocol/client (2.x), with its versionNegotiation
// mode; v1 is @modelcontextprotocol/sdk (1.x), legacy only. The steps use
// the e2e fixture as server f; the roots step calls the roots tool named by
// SB_ROOTS_TOOL (mcp_p_roots: the fixture as server p, one per client;
// "none": no roots step).

// Run as a file, or evaluated (node --input-type=module -e, from the
// directory whose node_modules hold the SDKs): the arguments follow.
const [sdk, mode, target, ...command] = process.argv.slice(process.argv[1]?.endsWith('.mjs') ? 2 : 1);
const v2 = sdk === 'v2';

const lib = v2
	? {
			...(await import('@modelcontextprotocol/client')),
			...(await import('@modelcontextprotocol/client/stdio')),
		}
	: {
			...(await import('@modelcontextprotocol/sdk/client/index.js')),
			...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')),
			...(await import('@modelcontextprotocol/sdk/client/stdio.js')),
			...(await import('@modelcontextprotocol/sdk/types.js')),
		};

const rootsTool = process.env.SB_ROOTS_TOOL || 'mcp_p_roots';
const counts = { progress: 0, logs: 0, updated: 0, elicited: 0 };
const options = {
	capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } },
	...(v2 ? { versionNegotiation: { mode } } : {}),
};
const client = new lib.Client({ name: `ts-${sdk}-${mode}`, version: '1.0.0' }, options);

// Handlers: by method name in v2, by schema in v1.
const onRequest = (method, schema, fn) => (v2 ? client.setRequestHandler(method, fn) : client.setRequestHandler(lib[schema], fn));
const onNotification = (method, schema, fn) =>
	v2 ? client.setNotificationHandler(method, fn) : client.setNotificationHandler(lib[schema], fn);

onRequest('sampling/createMessage', 'CreateMessageRequestSchema', async () => ({
	model: 'test-model',
	role: 'assistant',
	content: { type: 'text', text: 'sampled by the client' },
}));
onRequest('elicitation/create', 'ElicitRequestSchema', async (req) => {
	counts.elicited++;
	const n = /question (\d+) of/.exec(req.params.message)?.[1] ?? '0';
	return { action: 'accept', content: { answer: 'a' + n } };
});
onRequest('roots/list', 'ListRootsRequestSchema', async () => ({ roots: [{ uri: 'file:///ts-client-root', name: 'root' }] }));
onNotification('notifications/message', 'LoggingMessageNotificationSchema', () => counts.logs++);
onNotification('notifications/resources/updated', 'ResourceUpdatedNotificationSchema', () => counts.updated++);

const transport =
	target === 'stdio'
		? new lib.StdioClientTransport({ command: command[0], args: command.slice(1), stderr: 'inherit' })
		: new lib.StreamableHTTPClientTransport(new URL(target));

const steps = {};
const text = (res) => (res.content ?? []).map((c) => c.text ?? '').join('\n');
async function step(name, fn) {
	try {
		const got = await fn();
		steps[name] = got === undefined ? 'ok' : got;
	} catch (err) {
		steps[name] = 'error: ' + (err?.message ?? String(err));
	}
}
const wait = async (what, cond) => {
	for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 25));
	if (!cond()) throw new Error('no ' + (typeof what === 'function' ? what() : what));
};

await client.connect(transport);
// v1 speaks only legacy protocols; over stdio it does not say which.
const protocol = (v2 ? client.getNegotiatedProtocolVersion?.() : transport.protocolVersion) ?? 'legacy';
const modern = v2 && protocol >= '2026-07-28';
const callMeta = modern ? { 'io.modelcontextprotocol/logLevel': 'info' } : {};

await step('tools', async () => {
	for (let i = 0; i < 80; i++) {
		const { tools } = await client.listTools();
		const names = tools.map((t) => t.name);
		if (names.includes('mcp_f_echo') && (rootsTool === 'none' || names.includes(rootsTool))) return 'ok';
		await new Promise((r) => setTimeout(r, 250));
	}
	throw new Error('mcp_f_echo and ' + rootsTool + ' not listed');
});
await step('call', async () => {
	const res = await client.callTool({ name: 'mcp_f_echo', arguments: { text: 'from ts' } });
	if (!text(res).includes('from ts')) throw new Error(text(res));
});
await step('progress and logs', async () => {
	if (!modern) await client.setLoggingLevel('info');
	// Paced, and one more step than needed: the SDK stops listening for a
	// call's progress once its answer is in, and over stdio the last
	// notification, read with the answer, is sometimes lost on the
	// client's side (2 of 3 in 1 of 3 runs straight against the fixture).
	const params = { name: 'mcp_f_progress', arguments: { steps: 4, delay_ms: 20 }, _meta: callMeta };
	const onprogress = () => counts.progress++;
	// v1 takes a result schema before the options.
	const res = v2 ? await client.callTool(params, { onprogress }) : await client.callTool(params, undefined, { onprogress });
	if (res.isError) throw new Error(text(res));
	const logged = await client.callTool({ name: 'mcp_f_log', arguments: { level: 'info', message: 'from the fixture' }, _meta: callMeta });
	if (logged.isError) throw new Error(text(logged));
	await wait(() => `3 of 4 progress notifications and a log message (got ${counts.progress} and ${counts.logs})`, () => counts.progress >= 3 && counts.logs >= 1);
	if (counts.progress > 4) throw new Error(`${counts.progress} progress notifications for 4 steps`);
});
await step('sampling', async () => {
	const res = await client.callTool({ name: 'mcp_f_sample', arguments: { prompt: 'hi' } });
	if (!text(res).includes('sampled by the client')) throw new Error(text(res));
});
await step('elicitation in two rounds', async () => {
	const res = await client.callTool({ name: 'mcp_f_elicit_rounds', arguments: { rounds: 2 } });
	if (!text(res).includes('a1,a2')) throw new Error(text(res));
});
if (rootsTool !== 'none') await step('roots', async () => {
	const res = await client.callTool({ name: rootsTool, arguments: {} });
	if (!text(res).includes('file:///ts-client-root')) throw new Error(text(res));
});
await step('resources', async () => {
	const res = await client.readResource({ uri: 'fixture://static/hello' });
	if (!res.contents?.[0]?.text?.includes('hello from f')) throw new Error(JSON.stringify(res));
});
await step('prompts', async () => {
	const res = await client.getPrompt({ name: 'mcp_f_greet', arguments: { name: 'Ada' } });
	if (!JSON.stringify(res.messages).includes('Ada')) throw new Error(JSON.stringify(res));
});
await step('subscriptions', async () => {
	const uri = 'fixture://static/hello';
	let sub;
	if (modern) sub = await client.listen({ resourceSubscriptions: [uri] });
	else await client.subscribeResource({ uri });
	await client.callTool({ name: 'mcp_f_touch_resource', arguments: { uri } });
	await wait('notifications/resources/updated', () => counts.updated >= 1);
	await sub?.close?.();
});

console.log(JSON.stringify({ protocol, steps }));
await client.close();
