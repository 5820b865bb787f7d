package node

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestFlagsAndEnv(t *testing.T) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	BindFlags(fs, &cfg)
	if err := fs.Parse([]string{"--sync", "always", "--idle-timeout", "1m", "--archive-after", "0", "--episodic-ttl", "24h"}); err != nil {
		t.Fatal(err)
	}
	if cfg.ArchiveAfter != 0 || cfg.Actors.EpisodicTTL != 24*time.Hour {
		t.Fatalf("retention flags: archive-after %s, episodic-ttl %s", cfg.ArchiveAfter, cfg.Actors.EpisodicTTL)
	}
	env := map[string]string{
		"AGENTMEM_SYNC":           "default", // the flag wins
		"AGENTMEM_DATA_DIR":       "/var/lib/agentmem",
		"AGENTMEM_SNAPSHOT_EVERY": "25",
		"AGENTMEM_IDLE_TIMEOUT":   "9m", // the flag wins
	}
	if err := ApplyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.Sync != SyncAlways || cfg.DataDir != "/var/lib/agentmem" || cfg.Actors.SnapshotEvery != 25 || cfg.Actors.IdleTimeout != time.Minute {
		t.Fatalf("config = %+v", cfg)
	}
	err := ApplyEnv(fs, func(k string) string {
		if k == "AGENTMEM_REPLICAS" {
			return "three"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "AGENTMEM_REPLICAS") {
		t.Fatalf("bad env value: err = %v, want one naming AGENTMEM_REPLICAS", err)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := map[string]func(*Config){
		"sync":          func(c *Config) { c.Sync = "sometimes" },
		"replicas":      func(c *Config) { c.Replicas = 0 },
		"nats-listen":   func(c *Config) { c.NATSListen = "4222" },
		"data-dir":      func(c *Config) { c.DataDir = "" },
		"http":          func(c *Config) { c.HTTPAddr = "nope" },
		"llmsummary":    func(c *Config) { c.LLM.BaseURL = "ftp://x" },
		"embed: model":  func(c *Config) { c.Embeddings.BaseURL = "http://x/v1" },
		"idle_timeout":  func(c *Config) { c.Actors.IdleTimeout = 0 },
		"archive-after": func(c *Config) { c.ArchiveAfter = -time.Second },
		"delete-after":  func(c *Config) { c.DeleteAfter = -time.Second },
		"episodic_ttl":  func(c *Config) { c.Actors.EpisodicTTL = 1500 * time.Millisecond },
	}
	for want, mutate := range cases {
		cfg := DefaultConfig()
		mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v", want, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
