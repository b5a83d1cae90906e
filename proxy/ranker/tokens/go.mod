module github.com/mcp-switchboard/switchboard/proxy/ranker/tokens

go 1.26.0

require (
	github.com/mcp-switchboard/switchboard v0.0.0
	github.com/pkoukk/tiktoken-go v0.1.8
	github.com/pkoukk/tiktoken-go-loader v0.0.2
)

require (
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/kljensen/snowball v0.10.0 // indirect
)

replace github.com/mcp-switchboard/switchboard => ../../..
