module sandfs

go 1.26.8

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/julienschmidt/httprouter v1.3.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	golang.org/x/sys v0.50.0
)

require golang.org/x/text v0.14.0 // indirect
