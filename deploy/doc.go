// Package deploy holds sandfs's Kubernetes manifests (*.yaml here) and,
// in ./image, the tool that builds its container image. It is its own
// module (sandfs/deploy) so that the Kubernetes and container-registry
// modules its test and tool need never enter the daemon's module.
//
// manifests_test.go decodes every manifest strictly with the Kubernetes
// API types (a misspelt field is an error, as kubectl apply --validate=strict
// would make it) and checks what the daemon needs of its pod: /dev/fuse,
// Bidirectional propagation where it mounts, probes on /health, the token
// from a Secret file and never on argv, a pinned image tag.
package deploy
