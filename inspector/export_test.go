package inspector

import (
	"net/http"

	"github.com/agentmem/agentmem/tenancy"
)

// SetLocalCaller makes the single-user node's viewer the principal c, so
// a test can look through the eyes of a viewer the API's write rules
// refuse (the inspector serves admins only, who may write everything).
func SetLocalCaller(h http.Handler, c *tenancy.Caller) { h.(*Inspector).local.caller = c }
