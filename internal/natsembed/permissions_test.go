package natsembed

import (
	"slices"
	"testing"
)

// TestNodePermissionsLogStreams: the node user may delete none of the
// log's streams: the one stream, or each partition's when the log is in
// partitions.
func TestNodePermissionsLogStreams(t *testing.T) {
	one := &NodeUsers{Stream: "MEM"}
	parts := &NodeUsers{Stream: "MEM", LogStreams: []string{"MEM_P0", "MEM_P1", "MEM_P2"}}
	for _, tc := range []struct {
		u    *NodeUsers
		deny []string
	}{
		{one, []string{"mem.v1.>", "$JS.API.STREAM.DELETE.MEM"}},
		{parts, []string{"mem.v1.>", "$JS.API.STREAM.DELETE.MEM_P0", "$JS.API.STREAM.DELETE.MEM_P1", "$JS.API.STREAM.DELETE.MEM_P2"}},
	} {
		got := NodePermissions(tc.u.logStreams()...).Publish.Deny
		if !slices.Equal(got, tc.deny) {
			t.Errorf("deny %v, want %v", got, tc.deny)
		}
	}
}
