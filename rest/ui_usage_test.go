package rest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sandfs/internal/testenv"
)

// TestUIUsageLine runs the console's usage.js (the embedded module) under
// node beside stand-ins of the modules it imports (the page, the state and
// the API): the selected sandbox's usage and quota
// from GET /v1/sandboxes become the header's line; a bound of 0 shows the
// usage alone; a list without usage (or a failed one) shows nothing; the
// line is marked full at a bound.
func TestUIUsageLine(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Skip(t, []string{"SANDFS_REQUIRE_UI"}, "node is not on PATH: %v", err)
	}
	type line struct {
		Text   string `json:"text"`
		Hidden bool   `json:"hidden"`
		Full   bool   `json:"full"`
	}
	cases := []struct {
		name string
		list string // the answer of GET /v1/sandboxes; "" : the request fails
		want line
	}{
		{"both bounds", `{"sandboxes":[{"name":"other"},{"name":"web","usage":{"bytes":12897485,"entries":340},"quota":{"bytes":1073741824,"entries":10000}}]}`,
			line{Text: "12.3 MiB of 1 GiB · 340 of 10,000 entries"}},
		{"no bounds", `{"sandboxes":[{"name":"web","usage":{"bytes":512,"entries":3},"quota":{"bytes":0,"entries":0}}]}`,
			line{Text: "512 B · 3 entries"}},
		{"bytes bound only, at it", `{"sandboxes":[{"name":"web","usage":{"bytes":2048,"entries":12345},"quota":{"bytes":2048,"entries":0}}]}`,
			line{Text: "2 KiB of 2 KiB · 12,345 entries", Full: true}},
		{"no usage in the list", `{"sandboxes":[{"name":"web"}]}`, line{Hidden: true}},
		{"not in the list", `{"sandboxes":[{"name":"other","usage":{"bytes":1,"entries":1}}]}`, line{Hidden: true}},
		{"the list fails", "", line{Hidden: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The real usage.js, its imports stood in for.
			dir := uiModuleDir(t)
			in, _ := json.Marshal(c.list)
			stubs := map[string]string{
				"dom.js": `export const el = { textContent: 'stale', hidden: false, cls: new Set(), classList: { toggle(c, on) { on ? el.cls.add(c) : el.cls.delete(c); } } };
export const $ = (id) => id === 'usage' ? el : null;
`,
				"state.js": `export const state = { sandbox: 'web' };
export const onSwitch = [], onFeed = [];
`,
				"api.js": `const list = ` + string(in) + `;
export async function listSandboxes() {
  if (list === '') throw new Error('refused');
  return JSON.parse(list);
}
`,
				"usage_check.js": `import { el } from './dom.js';
import { onFeed, onSwitch } from './state.js';
import { wireUsage } from './usage.js';
wireUsage();
if (onSwitch.length !== 1 || onFeed.length !== 1) throw new Error('hooks not set');
await onSwitch[0]();
console.log(JSON.stringify({ text: el.textContent, hidden: el.hidden, full: el.cls.has('full') }));
`,
			}
			for name, src := range stubs {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(dir, "usage_check.js")
			out, err := exec.Command(node, p).CombinedOutput()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, out)
			}
			var got line
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
