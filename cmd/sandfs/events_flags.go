package main

import (
	"flag"
	"net/url"
	"os"
	"strings"
)

// eventsFlags are serve's flags of the fleet's NATS JetStream (natsout):
// where to publish the journal, where to replicate the checkpoints, and
// under which host name.
type eventsFlags struct {
	url       string // --events nats://HOST:PORT; "" = off
	host      string // --events-host NAME; "" = the hostname
	replicate string // --replicate nats://HOST:PORT or "events"; after check, a URL or "" = off
}

// replicateEvents is the value of --replicate that names the --events broker.
const replicateEvents = "events"

func (f *eventsFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "events", "", "publish every sandbox's events to the JetStream stream SANDFS at `nats://HOST:PORT` (needs the durable journal)")
	fs.StringVar(&f.host, "events-host", "", "this host's `NAME` in the events' subjects and ids, and in the replicated manifests (default: the hostname)")
	fs.StringVar(&f.replicate, "replicate", "", "replicate every checkpoint to JetStream (objects bucket sandfs-objects, manifests in sandfs-cp-NAME) at `nats://HOST:PORT`, or \"events\" for the --events broker (needs the durable journal)")
}

// check refuses a bad URL or host before anything starts.
func (f *eventsFlags) check(historyOff bool) error {
	if f.url == "" && f.host != "" && f.replicate == "" {
		return usagef("--events-host needs --events or --replicate")
	}
	if f.url != "" {
		if err := checkNATS("--events", f.url); err != nil {
			return err
		}
		if historyOff {
			return usagef("--events needs the durable journal: drop --no-history (events queue there while the broker is away)")
		}
	}
	switch f.replicate {
	case "":
	case replicateEvents:
		if f.url == "" {
			return usagef("--replicate events needs --events nats://HOST:PORT")
		}
		f.replicate = f.url
	default:
		if err := checkNATS("--replicate", f.replicate); err != nil {
			return err
		}
	}
	if f.replicate != "" && historyOff {
		return usagef("--replicate needs the durable journal: drop --no-history (checkpoints live in the state directory)")
	}
	if f.url == "" && f.replicate == "" {
		return nil
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

// checkNATS refuses a broker address that is not nats://HOST[:PORT].
func checkNATS(flag, v string) error {
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "nats" || u.Host == "" {
		return usagef("%s %q: want nats://HOST:PORT", flag, v)
	}
	return nil
}
