package node

import "github.com/agentmem/agentmem/actors"

// DirectoryForTest is the node's actor directory, for tests that bypass
// placement (what a request that passed the ownership check just before a
// pause does).
func (n *Node) DirectoryForTest() *actors.Directory { return n.dir }

// ConnectedServerForTest names the NATS server the node's connection is on.
func (n *Node) ConnectedServerForTest() string { return n.nc.ConnectedServerName() }

// DataDirForTest is the node's data directory.
func (n *Node) DataDirForTest() string { return n.cfg.DataDir }
