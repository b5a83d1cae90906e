package ranker

// The definitions of switchboard's own two tools in search mode, exactly as
// tools/list shows them: the proxy publishes these, and the token figures
// count these.
const (
	FindToolsDefinition = `{"name":"switchboard_find_tools","title":"Find tools",` +
		`"description":"Search the tools of every connected MCP server for the ones that fit a task. Returns each match's name, server, description and input schema; call one with switchboard_call_tool (or by its name, once your tool list shows it).",` +
		`"inputSchema":{"type":"object","properties":{` +
		`"query":{"type":"string","description":"What you want to do, in a few words"},` +
		`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"Most tools to return (default 8)"},` +
		`"server":{"type":"string","description":"Only tools of this server"}},` +
		`"required":["query"],"additionalProperties":false}}`
	CallToolDefinition = `{"name":"switchboard_call_tool","title":"Call a tool",` +
		`"description":"Call a tool that switchboard_find_tools returned, by its name, with arguments that match its input schema.",` +
		`"inputSchema":{"type":"object","properties":{` +
		`"name":{"type":"string","description":"The tool's name, as switchboard_find_tools returned it"},` +
		`"arguments":{"type":"object","description":"The tool's arguments"}},` +
		`"required":["name"],"additionalProperties":false}}`
)
