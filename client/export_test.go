package client

// KeepForTest makes c keep seq and token as if its writes had returned
// them (a layout the log no longer has).
func KeepForTest(c *Client, seq uint64, token string) {
	c.lastSeq.Store(seq)
	c.tokens.set(token)
}
