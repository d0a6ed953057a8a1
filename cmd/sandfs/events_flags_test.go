package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The --events flags are checked before anything starts.
func TestEventsFlagsCheck(t *testing.T) {
	for _, tc := range []struct {
		name       string
		f          eventsFlags
		historyOff bool
		err        string // "" = accepted
		host       string // the host after check, when accepted
	}{
		{"off", eventsFlags{}, false, "", ""},
		{"off without history", eventsFlags{}, true, "", ""},
		{"given host", eventsFlags{url: "nats://127.0.0.1:4222", host: "h1"}, false, "", "h1"},
		{"dotted host kept", eventsFlags{url: "nats://broker:4222", host: "h1.example"}, false, "", "h1.example"},
		{"host without events", eventsFlags{host: "h1"}, false, "--events-host needs --events", ""},
		{"replicate", eventsFlags{replicate: "nats://broker:4222", host: "h1"}, false, "", "h1"},
		{"replicate the events broker", eventsFlags{url: "nats://broker:4222", replicate: "events", host: "h1"}, false, "", "h1"},
		{"replicate events without events", eventsFlags{replicate: "events", host: "h1"}, false, "--replicate events needs --events", ""},
		{"replicate not nats", eventsFlags{replicate: "http://broker", host: "h1"}, false, "want nats://HOST:PORT", ""},
		{"replicate without history", eventsFlags{replicate: "nats://broker:4222", host: "h1"}, true, "--replicate needs the durable journal", ""},
		{"not nats", eventsFlags{url: "http://127.0.0.1:4222", host: "h"}, false, "want nats://HOST:PORT", ""},
		{"no host part", eventsFlags{url: "nats://", host: "h"}, false, "want nats://HOST:PORT", ""},
		{"no history", eventsFlags{url: "nats://127.0.0.1:4222", host: "h"}, true, "needs the durable journal", ""},
		{"slash in host", eventsFlags{url: "nats://127.0.0.1:4222", host: "a/b"}, false, "a name without", ""},
		{"wildcard in host", eventsFlags{url: "nats://127.0.0.1:4222", host: "a*"}, false, "a name without", ""},
		{"placement", eventsFlags{placement: "nats://broker:4222", host: "h1", leaseTTL: 2 * time.Second}, true, "", "h1"},
		{"placement the events broker", eventsFlags{url: "nats://broker:4222", placement: "events", host: "h1", leaseTTL: time.Second}, false, "", "h1"},
		{"placement events without events", eventsFlags{placement: "events", host: "h1", leaseTTL: time.Second}, false, "--placement events needs --events", ""},
		{"placement not nats", eventsFlags{placement: "http://broker", host: "h1", leaseTTL: time.Second}, false, "want nats://HOST:PORT", ""},
		{"lease ttl too short", eventsFlags{placement: "nats://broker:4222", host: "h1", leaseTTL: 500 * time.Millisecond}, false, "--lease-ttl", ""},
		{"advertise without placement", eventsFlags{advertise: "http://h1:7420"}, false, "--advertise needs --placement", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			err := f.check(tc.historyOff)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if f.host != tc.host {
					t.Fatalf("host %q, want %q", f.host, tc.host)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one with %q", err, tc.err)
			}
		})
	}
	r := eventsFlags{url: "nats://127.0.0.1:4222", replicate: "events"}
	if err := r.check(false); err != nil || r.replicate != r.url {
		t.Fatalf("--replicate events: %q, %v; want the --events URL", r.replicate, err)
	}
	f := eventsFlags{url: "nats://127.0.0.1:4222"}
	if err := f.check(false); err != nil || f.host == "" {
		t.Fatalf("default host: %q, %v", f.host, err)
	}
}

// --advertise, or the --listen address other hosts can reach.
func TestAdvertiseURL(t *testing.T) {
	hn, _ := os.Hostname()
	for _, tc := range []struct {
		advertise, listen string
		want, err         string
	}{
		{"", "10.0.0.5:7420", "http://10.0.0.5:7420", ""},
		{"", "0.0.0.0:7420", "http://" + hn + ":7420", ""},
		{"", "[::]:7420", "http://" + hn + ":7420", ""},
		{"", "unix:/run/sandfs.sock", "", "give --advertise"},
		{"", "127.0.0.1:0", "", "give --advertise"},
		{"https://h1.example:8443/", "unix:/run/sandfs.sock", "https://h1.example:8443", ""},
		{"nats://h1:7420", "127.0.0.1:7420", "", "want http://"},
		{"http://h1:7420/?x=1", "127.0.0.1:7420", "", "want http://"},
	} {
		f := eventsFlags{placement: "nats://broker:4222", advertise: tc.advertise}
		got, err := f.advertiseURL(tc.listen)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %q: %q, %v; want an error with %q", tc.advertise, tc.listen, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q %q: %q, %v; want %q", tc.advertise, tc.listen, got, err, tc.want)
		}
	}
	if got, err := (&eventsFlags{}).advertiseURL("127.0.0.1:7420"); got != "" || err != nil {
		t.Errorf("placement off: %q, %v", got, err)
	}
}
