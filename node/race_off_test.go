//go:build !race

package node_test

// raceDetector is true in a -race build.
const raceDetector = false
