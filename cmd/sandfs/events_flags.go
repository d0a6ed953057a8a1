package main

import (
	"flag"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"sandfs/natsout/placement"
)

// eventsFlags are serve's flags of the fleet's NATS JetStream (natsout):
// where to publish the journal, where to replicate the checkpoints, and
// under which host name.
type eventsFlags struct {
	url       string // --events nats://HOST:PORT; "" = off
	host      string // --events-host NAME; "" = the hostname
	replicate string // --replicate nats://HOST:PORT or "events"; after check, a URL or "" = off
	placement string // --placement nats://HOST:PORT or "events"; after check, a URL or "" = off
	advertise string // --advertise URL; "" = http://<--listen>
	leaseTTL  time.Duration
}

// replicateEvents is the value of --replicate that names the --events broker.
const replicateEvents = "events"

func (f *eventsFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "events", "", "publish every sandbox's events to the JetStream stream SANDFS at `nats://HOST:PORT` (needs the durable journal)")
	fs.StringVar(&f.host, "events-host", "", "this host's `NAME` in the events' subjects and ids, and in the replicated manifests (default: the hostname)")
	fs.StringVar(&f.placement, "placement", "", "serve a sandbox only while this host holds its lease in the fleet's KV bucket sandfs-placement at `nats://HOST:PORT`, or \"events\" for the --events broker; requests for a sandbox another host holds are sent there (307)")
	fs.StringVar(&f.advertise, "advertise", "", "the `URL` other hosts send clients to for this daemon's sandboxes, with --placement (default: http://<--listen>, the hostname for an unspecified address)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", placement.DefaultTTL, "how long (`DURATION`) a sandbox's lease lives unrenewed, with --placement (renewed every third of it; the fleet's bucket keeps the first host's)")
	fs.StringVar(&f.replicate, "replicate", "", "replicate every checkpoint to JetStream (objects in sandfs-small and sandfs-objects, manifests in sandfs-cp-NAME) at `nats://HOST:PORT`, or \"events\" for the --events broker (needs the durable journal)")
}

// check refuses a bad URL or host before anything starts.
func (f *eventsFlags) check(historyOff bool) error {
	if f.url == "" && f.host != "" && f.replicate == "" && f.placement == "" {
		return usagef("--events-host needs --events, --replicate or --placement")
	}
	switch f.placement {
	case "":
		if f.advertise != "" {
			return usagef("--advertise needs --placement")
		}
	case replicateEvents:
		if f.url == "" {
			return usagef("--placement events needs --events nats://HOST:PORT")
		}
		f.placement = f.url
	default:
		if err := checkNATS("--placement", f.placement); err != nil {
			return err
		}
	}
	if f.placement != "" && f.leaseTTL < placement.MinTTL {
		return usagef("--lease-ttl %v: at least %v", f.leaseTTL, placement.MinTTL)
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
	if f.url == "" && f.replicate == "" && f.placement == "" {
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

// advertiseURL is --advertise, or http://<listen> when not given (an
// unspecified address: the hostname); "" when --placement is off.
func (f *eventsFlags) advertiseURL(listen string) (string, error) {
	if f.placement == "" {
		return "", nil
	}
	if f.advertise != "" {
		u, err := url.Parse(f.advertise)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return "", usagef("--advertise %q: want http://HOST:PORT or https://… (no query)", f.advertise)
		}
		return strings.TrimSuffix(u.String(), "/"), nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || strings.HasPrefix(listen, "unix:") || port == "0" {
		return "", usagef("--placement: give --advertise URL (other hosts cannot reach --listen %s)", listen)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if host, err = os.Hostname(); err != nil {
			return "", usagef("--placement: no hostname (%v): give --advertise URL", err)
		}
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
