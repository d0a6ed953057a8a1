package replicate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"sandfs/core/checkpoint/cas"
	"sandfs/internal/parallel"
)

// A host taking a sandbox up where its store holds nothing fetches every
// object, and a tree is mostly small files: one KV get each is one round
// trip each, and the time goes to the round trips, not the bytes. The
// broker answers many keys of a KV bucket in one direct get (multi_last,
// since nats-server 2.11), so small objects are asked for in batches. A
// broker that does not answer it (older, or the bucket without direct
// gets) is asked one key at a time, as before.

const (
	// batchKeys is the most keys one batch names; the broker answers at
	// most 1024 a request.
	batchKeys = 512
	// batchBytes bounds what one answer holds (the broker stops after the
	// object that passes it), so a fetch's memory is bounded by
	// batchWorkers of them.
	batchBytes = 4 << 20
	// batchWorkers is how many batches are asked at once: the broker
	// answers one connection's requests in turn, so more overlap only the
	// writing of one batch with the asking of the next.
	batchWorkers = 4
)

// fetchSmall brings the objects hashes (each at most SmallMax bytes,
// sizes giving each one's) to put from the small objects'
// bucket, in batches. It answers the bytes fetched and the hashes it did
// not bring: those the bucket lacks, or all of a batch the broker would
// not answer as one, for the caller to fetch one by one.
func (f *Fleet) fetchSmall(ctx context.Context, put putFunc, hashes []string, sizes map[string]int64) (n int64, rest []string, err error) {
	kv, err := f.smallBucket(ctx)
	if kv == nil || err != nil || len(hashes) == 0 {
		return 0, hashes, err
	}
	var mu sync.Mutex
	err = eachBatch(ctx, hashes, sizes, func(ctx context.Context, batch []string) error {
		got, left, err := f.fetchBatch(ctx, put, batch, sizes)
		mu.Lock()
		n += got
		rest = append(rest, left...)
		mu.Unlock()
		return err
	})
	return n, rest, err
}

// eachBatch calls fn on runs of hashes of at most batchKeys keys and
// batchBytes bytes, batchWorkers at once.
func eachBatch(ctx context.Context, hashes []string, sizes map[string]int64, fn func(context.Context, []string) error) error {
	var batches [][]string
	var size int64
	for i, h := range hashes {
		last := len(batches) - 1
		if i == 0 || len(batches[last]) == batchKeys || size+sizes[h] > batchBytes {
			batches = append(batches, nil)
			last, size = last+1, 0
		}
		batches[last] = append(batches[last], h)
		size += sizes[h]
	}
	return parallel.Each(ctx, batchWorkers, batches, fn)
}

// fetchBatch brings what the bucket holds of batch, asking again for what
// an answer cut short left out, until an answer brings nothing. It
// answers the bytes fetched and the hashes left.
func (f *Fleet) fetchBatch(ctx context.Context, put putFunc, batch []string, sizes map[string]int64) (int64, []string, error) {
	var n int64
	left := batch
	for len(left) > 0 {
		got := map[string]bool{}
		err := f.directGet(ctx, left, func(hash string, data []byte) error {
			if got[hash] {
				return fmt.Errorf("object %s: answered twice in one batch", hash)
			}
			got[hash] = true
			m, err := putSmall(put, hash, data, sizes[hash])
			n += m
			return err
		})
		if err == errNoBatch {
			return n, left, nil
		} else if err != nil {
			return n, nil, err
		}
		if len(got) == 0 {
			break
		}
		var next []string
		for _, h := range left {
			if !got[h] {
				next = append(next, h)
			}
		}
		left = next
	}
	return n, left, nil
}

// putSmall puts data as the object hash of size bytes.
func putSmall(put putFunc, hash string, data []byte, size int64) (int64, error) {
	if int64(len(data)) != size {
		return 0, fmt.Errorf("object %s: %d bytes, the manifest says %d: refused", hash, len(data), size)
	}
	n, err := put(hash, bytes.NewReader(data), size)
	if err != nil {
		return 0, fmt.Errorf("object %s: %w", hash, err)
	}
	return n, nil
}

// errNoBatch is a broker that does not answer a batch of keys.
var errNoBatch = errors.New("the broker answers no batch get")

// directGet asks the small objects' bucket for the keys hashes in one
// direct get and calls put for each one it answers, in the answer's
// order. A key the bucket lacks (or deleted) is left out; an answer
// stops early when it passes batchBytes. Only valid hashes are asked: a
// subject is a pattern to the broker, and a wildcard would match keys
// nobody named.
func (f *Fleet) directGet(ctx context.Context, hashes []string, put func(hash string, data []byte) error) error {
	subjects := make([]string, len(hashes))
	asked := make(map[string]bool, len(hashes))
	for i, h := range hashes {
		if !cas.ValidHash(h) {
			return fmt.Errorf("object %q: not a SHA-256: refused", h)
		}
		subjects[i] = smallPrefix + h
		asked[h] = true
	}
	req, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
		MaxBytes  int      `json:"max_bytes"`
	}{subjects, batchBytes})
	if err != nil {
		return err
	}
	nc := f.js.Conn()
	sub, err := nc.SubscribeSync(nc.NewInbox())
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(directGetSubject, sub.Subject, req); err != nil {
		return err
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, opTimeout)
		msg, err := sub.NextMsgWithContext(wctx)
		cancel()
		if errors.Is(err, nats.ErrNoResponders) { // no direct gets on the bucket
			return errNoBatch
		} else if err != nil {
			return fmt.Errorf("the small objects' bucket: batch get: %w", err)
		}
		switch msg.Header.Get("Status") {
		case "":
		case "204": // the end of the answer
			return nil
		case "404": // none of the keys held
			return nil
		default: // 408: a broker without multi_last
			return errNoBatch
		}
		key, ok := strings.CutPrefix(msg.Header.Get("Nats-Subject"), smallPrefix)
		if !ok || !asked[key] {
			return fmt.Errorf("the small objects' bucket: batch get answered %q, not asked", msg.Header.Get("Nats-Subject"))
		}
		if op := msg.Header.Get("KV-Operation"); op != "" { // deleted or purged
			continue
		}
		if err := put(key, msg.Data); err != nil {
			return err
		}
	}
}

// smallPrefix is the subject of a small object's key but the key;
// directGetSubject the direct get of the bucket's stream.
const (
	smallPrefix      = "$KV." + SmallBucket + "."
	directGetSubject = "$JS.API.DIRECT.GET.KV_" + SmallBucket
)
