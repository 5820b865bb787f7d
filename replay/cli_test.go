package replay_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/version"
	"github.com/agentmem/agentmem/replay"
)

// TestHelpAndVersionExitZero: "replay <command> --help" prints the usage
// and succeeds (it is not a usage error), and --version prints the version.
func TestHelpAndVersionExitZero(t *testing.T) {
	for _, args := range [][]string{{"rebuild", "--help"}, {"verify", "-h"}, {"inspect", "session", "s1", "--help"}, {"help"}} {
		var out bytes.Buffer
		err := replay.Run(context.Background(), args, &out, &out)
		if replay.ExitCode(err) != 0 || !strings.Contains(out.String(), "rebuild") {
			t.Errorf("%v: exit %d (%v), output %q", args, replay.ExitCode(err), err, out.String())
		}
	}
	var out bytes.Buffer
	if err := replay.Run(context.Background(), []string{"--version"}, &out, &out); err != nil || out.String() != "agentmem-replay "+version.Version+"\n" {
		t.Errorf("--version: %v %q", err, out.String())
	}
	if err := replay.Run(context.Background(), []string{"rebuild", "--no-such-flag"}, &out, &out); replay.ExitCode(err) != 2 {
		t.Errorf("a bad flag: exit %d, want 2", replay.ExitCode(err))
	}
}
