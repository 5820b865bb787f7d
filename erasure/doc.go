// Package erasure owns the removal of data on request and by policy: what
// an erase covers (the planner), the removal ledger's plan records and
// their completion (the coordinator), and the resumption of what a crash
// left half done.
package erasure
