package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Word  string `json:"word"`
	Times *int   `json:"times,omitempty"`
}

type echoOut struct {
	Said string `json:"said"`
}

// TestAddTool: a tool registered by addTool lists the schemas inferred
// from its types, refuses arguments its schema refuses (changing nothing:
// the handler never runs), answers its output as structured content, and
// as text when the handler gave none, and tells a handler's error as a
// tool error and a JSON-RPC error as a protocol one.
func TestAddTool(t *testing.T) {
	ran := 0
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	f := &Family{log: slog.New(slog.DiscardHandler)}
	addTool(f, srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, echoOut, error) {
		ran++
		switch in.Word {
		case "fail":
			return nil, echoOut{}, errors.New("it failed")
		case "wire":
			return nil, echoOut{}, &jsonrpc.Error{Code: -32602, Message: "bad params"}
		case "plain":
			return nil, echoOut{Said: in.Word}, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "said " + in.Word}}}, echoOut{Said: in.Word}, nil
	})
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 1 {
		t.Fatalf("tools/list: %v, %v", lt, err)
	}
	for _, c := range []struct {
		name string
		got  any
		want *jsonschema.Schema
	}{
		{"input", lt.Tools[0].InputSchema, must(jsonschema.For[echoIn](nil))},
		{"output", lt.Tools[0].OutputSchema, must(jsonschema.For[echoOut](nil))},
	} {
		got, want := asJSON(c.got), asJSON(c.want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s schema %v, want %v", c.name, got, want)
		}
	}

	cases := []struct {
		name      string
		args      any
		isError   bool
		protocol  bool
		text      string // the text, or its start for a refusal
		structure string // the structured content, as JSON
		runs      bool
	}{
		{"content and structure", map[string]any{"word": "hi"}, false, false, "said hi", `{"said":"hi"}`, true},
		{"structure as text", map[string]any{"word": "plain"}, false, false, `{"said":"plain"}`, `{"said":"plain"}`, true},
		{"optional given", map[string]any{"word": "hi", "times": 2}, false, false, "said hi", `{"said":"hi"}`, true},
		{"unknown argument", map[string]any{"word": "hi", "Word": "x"}, true, false, `validating "arguments": `, "", false},
		{"wrong type", map[string]any{"word": 7}, true, false, `validating "arguments": `, "", false},
		{"missing", map[string]any{}, true, false, `validating "arguments": `, "", false},
		{"none at all", nil, true, false, `validating "arguments": `, "", false},
		{"handler error", map[string]any{"word": "fail"}, true, false, "it failed", "", true},
		{"protocol error", map[string]any{"word": "wire"}, false, true, "bad params", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := ran
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: c.args})
			if c.protocol {
				if err == nil || !strings.Contains(err.Error(), c.text) {
					t.Fatalf("got %v, %v; want the protocol error %q", res, err, c.text)
				}
				return
			}
			if err != nil {
				t.Fatalf("protocol error: %v", err)
			}
			if res.IsError != c.isError {
				t.Errorf("isError %v, want %v", res.IsError, c.isError)
			}
			text := ""
			if len(res.Content) == 1 {
				text = res.Content[0].(*sdk.TextContent).Text
			}
			if c.isError && !c.runs && !strings.HasPrefix(text, c.text) || (!c.isError || c.runs) && text != c.text {
				t.Errorf("text %q, want %q", text, c.text)
			}
			if c.structure != "" {
				b, _ := json.Marshal(res.StructuredContent)
				if string(b) != c.structure {
					t.Errorf("structured content %s, want %s", b, c.structure)
				}
			} else if res.StructuredContent != nil {
				t.Errorf("structured content %v on an error", res.StructuredContent)
			}
			if ran-before != map[bool]int{true: 1, false: 0}[c.runs] {
				t.Errorf("the handler ran %d times, want it to run: %v", ran-before, c.runs)
			}
		})
	}
}

// asJSON is v as the generic JSON value it marshals to.
func asJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
