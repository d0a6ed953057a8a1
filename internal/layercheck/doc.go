// Package layercheck holds no code: its test proves that .ci/layering, the
// import rules of docs/design.md, fails when a package imports one it may
// not, each rule on a scratch copy of the module.
package layercheck
