package main

import (
	"flag"
	"net/url"
	"os"
	"strings"
)

// eventsFlags are serve's flags of the fleet's journal on NATS JetStream
// (natsout): where to publish and under which host name.
type eventsFlags struct {
	url  string // --events nats://HOST:PORT; "" = off
	host string // --events-host NAME; "" = the hostname
}

func (f *eventsFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "events", "", "publish every sandbox's events to the JetStream stream SANDFS at `nats://HOST:PORT` (needs the durable journal)")
	fs.StringVar(&f.host, "events-host", "", "this host's `NAME` in the events' subjects and ids (default: the hostname)")
}

// check refuses a bad URL or host before anything starts.
func (f *eventsFlags) check(historyOff bool) error {
	if f.url == "" {
		if f.host != "" {
			return usagef("--events-host needs --events")
		}
		return nil
	}
	u, err := url.Parse(f.url)
	if err != nil || u.Scheme != "nats" || u.Host == "" {
		return usagef("--events %q: want nats://HOST:PORT", f.url)
	}
	if historyOff {
		return usagef("--events needs the durable journal: drop --no-history (events queue there while the broker is away)")
	}
	if f.host == "" {
		h, err := os.Hostname()
		if err != nil {
			return usagef("--events: no hostname (%v): give --events-host", err)
		}
		f.host = h
	}
	if strings.ContainsAny(f.host, "/ \t\r\n*>") {
		return usagef("--events-host %q: a name without '/', '*', '>' or white space", f.host)
	}
	return nil
}
