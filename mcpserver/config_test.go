package mcpserver_test

import (
	"flag"
	"testing"

	"github.com/agentmem/agentmem/mcpserver"
)

// A flag not given on the command line comes from its AGENTMEM_* variable;
// one given wins; a bad value names the variable.
func TestApplyEnv(t *testing.T) {
	cfg := mcpserver.DefaultConfig()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	mcpserver.BindFlags(fs, &cfg)
	if err := fs.Parse([]string{"--agent", "a1"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENTMEM_NATS_PASSWORD": "pw", "AGENTMEM_AGENT": "a2", "AGENTMEM_NATS_USER": "agent-a1"}
	if err := mcpserver.ApplyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.NATSPassword != "pw" || cfg.NATSUser != "agent-a1" || cfg.Agent != "a1" {
		t.Errorf("config %+v", cfg)
	}
	fs2 := flag.NewFlagSet("t", flag.ContinueOnError)
	mcpserver.BindFlags(fs2, &cfg)
	_ = fs2.Parse(nil)
	if err := mcpserver.ApplyEnv(fs2, func(k string) string {
		if k == "AGENTMEM_TIMEOUT" {
			return "soon"
		}
		return ""
	}); err == nil {
		t.Error("AGENTMEM_TIMEOUT=soon accepted")
	}
}
