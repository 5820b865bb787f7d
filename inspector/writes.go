package inspector

// mayWrite reports whether v may change entries of scope kind:id (edit,
// delete, settle a conflict): the check the API applies to a scope write
// (tenancy.Caller.Scope; a session's scope follows its session, which an
// admin reaches). The API checks again on the viewer's own connection:
// this decides what the page offers and refuses early.
func (v *viewer) mayWrite(kind, id string) bool {
	if v.caller == nil {
		return true // the single-user node's unrestricted caller
	}
	if kind == "session" {
		return v.caller.Admin()
	}
	return v.caller.Scope(kind, id, true) == nil
}

// mayErase reports whether v may erase an entry of scope kind:id: erasing
// removes every writer's versions of the key, so the API asks an admin
// (a user's scope its user's principal, an agent's the agent).
func (v *viewer) mayErase(kind, id string) bool {
	if v.caller == nil || v.caller.Admin() {
		return true
	}
	switch kind {
	case "user":
		return v.caller.Scope(kind, id, true) == nil
	case "agent":
		return v.caller.Configure(kind, id) == nil
	}
	return false
}
