package sharedmem

import "testing"

func TestParseScopeNameReversesScopeID(t *testing.T) {
	for _, k := range Kinds() {
		id := "x1"
		if k == KindGlobal {
			id = GlobalID
		}
		name, err := ScopeID(k, id)
		if err != nil {
			t.Fatal(err)
		}
		gk, gid, err := ParseScopeName(name)
		if err != nil || gk != k || gid != id {
			t.Errorf("ParseScopeName(%q) = %q %q %v, want %q %q", name, gk, gid, err, k, id)
		}
	}
	for _, bad := range []string{"", "nokind:x", "user:", "user:a.b", "global:other"} {
		if _, _, err := ParseScopeName(bad); err == nil {
			t.Errorf("ParseScopeName(%q) accepted", bad)
		}
	}
}
