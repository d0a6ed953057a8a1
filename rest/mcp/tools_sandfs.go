package mcp

import sdk "github.com/modelcontextprotocol/go-sdk/mcp"

func (f *Family) addSandfsTools(s *sdk.Server) {}
