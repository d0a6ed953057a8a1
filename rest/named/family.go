package named

import "sandfs/rest/httpkit"

// Family serves the named-sandbox routes over the sandboxes of the server
// that hosts it.
type Family struct {
	host   httpkit.Host
	limits httpkit.Limits
}

// New is the family served by host.
func New(host httpkit.Host) *Family {
	return &Family{host: host, limits: host.Limits()}
}
