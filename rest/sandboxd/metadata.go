package sandboxd

import (
	"net/http"
	"os"
	"strings"

	"github.com/julienschmidt/httprouter"

	"sandfs/rest/httpkit"
)

// EnvPrefix names the environment variables GET /v1/metadata serves: the
// reference daemon's default (--metadata-env-prefix), the variables an
// orchestrator injects for the workload (SANDBOX_ID, SANDBOX_WORKSPACE, …).
const EnvPrefix = "SANDBOX_"

// Environ is the daemon's environment; a variable only so that a test can
// set it.
var Environ = os.Environ

// sensitive are the words that keep a variable off /v1/metadata even with
// the prefix: the standard forbids serving credentials there, and code in
// the sandbox may read it. A last guard, as in the reference daemon: the
// orchestrator must not put credentials under the prefix at all.
var sensitive = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CRED", "KEY", "AUTH", "BEARER", "PRIVATE", "CERT"}

// MetadataResponse is GET /v1/metadata's answer.
type MetadataResponse struct {
	Env map[string]string `json:"env"`
}

// metadata: GET /v1/metadata — the environment variables named with
// EnvPrefix, but those whose name looks like a credential.
func (f *Family) metadata(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return httpkit.WriteJSON(w, http.StatusOK, MetadataResponse{Env: metadataEnv(Environ())})
}

func metadataEnv(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || looksSecret(name) {
			continue
		}
		env[name] = value
	}
	return env
}

func looksSecret(name string) bool {
	upper := strings.ToUpper(name)
	for _, w := range sensitive {
		if strings.Contains(upper, w) {
			return true
		}
	}
	return false
}
