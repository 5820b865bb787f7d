package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMETourIsThisProgram: the README's Go tour is this file as it is
// (so it compiles as written).
func TestREADMETourIsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, tour, ok := strings.Cut(string(readme), "## A two-minute tour")
	if !ok {
		t.Fatal("README has no tour")
	}
	_, block, ok := strings.Cut(tour, "```go\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the tour has no Go block")
	}
	if block != string(src) {
		t.Fatalf("README's tour differs from examples/tour/main.go:\n%s", block)
	}
}
