package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool registers h as the tool t with what the SDK's typed AddTool
// gives (the argument schema inferred from In, checked on every call; the
// output schema from Out unless Out is any; the output as structured
// content, and as text when h set none), behind safe, but at a fraction of
// its cost per call, which a profile of tools/call read_text_file showed
// at two thirds of the daemon's CPU:
//   - the schemas are JSON, marshaled once: the SDK checks the tool's
//     x-mcp-header annotations on every call by marshaling its input
//     schema, which for a *jsonschema.Schema is a reflective walk;
//   - the arguments are validated once, without a marshal back (the
//     inferred schemas have no defaults to apply);
//   - the output is marshaled once and not validated: it is a type of this
//     package, so its schema holds by construction (tests check it), where
//     the SDK unmarshals, validates and marshals it again, a read's whole
//     text each time.
func addTool[In, Out any](f *Family, s *sdk.Server, t *sdk.Tool, h sdk.ToolHandlerFor[In, Out]) {
	tt := *t
	in := mustSchema(reflect.TypeFor[In]())
	tt.InputSchema = in.raw
	if reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		tt.OutputSchema = mustSchema(reflect.TypeFor[Out]()).raw
	}
	s.AddTool(&tt, safe(f.log, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args, err := in.check(req.Params.Arguments)
		if err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		var v In
		if err := json.Unmarshal(args, &v); err != nil {
			return toolError(err), nil
		}
		res, out, err := h(ctx, req, v)
		if err != nil {
			// A JSON-RPC error is the protocol's; any other is the tool's.
			if wire, ok := err.(*jsonrpc.Error); ok {
				return nil, wire
			}
			return toolError(err), nil
		}
		if res == nil {
			res = &sdk.CallToolResult{}
		}
		if o := any(out); o != nil {
			b, err := json.Marshal(o)
			if err != nil {
				return nil, fmt.Errorf("marshaling output: %w", err)
			}
			res.StructuredContent = json.RawMessage(b)
			if res.Content == nil {
				res.Content = []sdk.Content{&sdk.TextContent{Text: string(b)}}
			}
		}
		return res, nil
	}))
}

// schema is a tool's schema inferred from a Go type: as JSON for the tool
// list, and resolved for validation.
type schema struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
}

// mustSchema is the schema of t; a type without one is a defect of this
// package, found when the daemon starts.
func mustSchema(t reflect.Type) schema {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %v: %v", t, err))
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %v: %v", t, err))
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %v: %v", t, err))
	}
	return schema{raw: raw, resolved: r}
}

// check validates args against the schema and answers them as the JSON
// to unmarshal: absent arguments are {}.
func (s schema) check(args json.RawMessage) (json.RawMessage, error) {
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		args = json.RawMessage("{}")
	}
	v := map[string]any{}
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, fmt.Errorf("unmarshaling arguments: %w", err)
	}
	var a any = v
	if err := s.resolved.Validate(&a); err != nil {
		return nil, err
	}
	return args, nil
}
