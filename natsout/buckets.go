package natsout

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// A fleet's bucket is made by the first host that needs it and found by
// every other; two hosts making it at the same moment both end with the
// one the broker kept. A bucket found is used as it is (an operator may
// have made it first, with more replicas).

// KeyValue is the KV bucket cfg.Bucket, made with cfg when missing.
func KeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		if madeMeanwhile(err) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	return kv, err
}

// ObjectStore is the Object Store bucket cfg.Bucket, made with cfg when
// missing.
func ObjectStore(ctx context.Context, js jetstream.JetStream, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	obs, err := js.ObjectStore(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, cfg)
		if madeMeanwhile(err) {
			obs, err = js.ObjectStore(ctx, cfg.Bucket)
		}
	}
	return obs, err
}

// madeMeanwhile says a create failed because another host made the
// bucket between the look and the create.
func madeMeanwhile(err error) bool {
	return errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse)
}
