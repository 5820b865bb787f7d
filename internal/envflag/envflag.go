// Package envflag fills command-line flags from AGENTMEM_* environment
// variables, for every agentmem binary the same way.
package envflag

import (
	"flag"
	"fmt"
	"strings"
)

// Name is the environment variable of a flag: AGENTMEM_ + upper snake case
// ("nats-url" → AGENTMEM_NATS_URL).
func Name(flagName string) string {
	return "AGENTMEM_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Apply sets every flag of fs not given on the command line from its
// AGENTMEM_* variable, if set. A bad value is an error naming the variable.
func Apply(fs *flag.FlagSet, getenv func(string) string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] {
			return
		}
		if v := getenv(Name(f.Name)); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", Name(f.Name), v, e)
			}
		}
	})
	return err
}

// Usage returns a flag.FlagSet Usage that prints summary, then every flag
// with its AGENTMEM_* variable.
func Usage(fs *flag.FlagSet, summary string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "%s\n\nFlags (each also read from its AGENTMEM_* environment variable when not given):\n", summary)
		fs.VisitAll(func(f *flag.Flag) {
			def := ""
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
				def = fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(w, "  --%s  [%s]%s\n      %s\n", f.Name, Name(f.Name), def, f.Usage)
		})
	}
}
