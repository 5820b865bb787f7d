package natsapi

import "strings"

// DefaultReplyPrefixes are the reply subjects the service answers: the
// requester's inbox (nats.go and most clients use _INBOX.) and the response
// subjects nats-server creates for cross-account service imports (_R_.).
var DefaultReplyPrefixes = []string{"_INBOX.", "_R_."}

// neverReply are subject spaces the node never publishes a reply into,
// whatever the configured prefixes say: its own API, its event log, the
// JetStream, KV, object-store, service and system APIs. A reply subject is a
// requester's claim, not a permission: answering it with the node's own
// credentials would let a caller publish anywhere the node may (a "confused
// deputy": a reply subject of $JS.API.STREAM.PURGE.MEM purges the log).
var neverReply = []string{"mem.", "_AMN.", "$JS.", "$KV.", "$O.", "$SRV.", "$SYS.", "$NATS.", "_JS.", "$MQTT."}

// replyAllowed reports whether subject may be answered: it starts with one
// of prefixes, is a plain subject (no wildcard, no empty token) and is in
// none of the node's own spaces.
func replyAllowed(subject string, prefixes []string) bool {
	if subject == "" || strings.ContainsAny(subject, "*> \t\r\n") ||
		strings.Contains(subject, "..") || strings.HasSuffix(subject, ".") {
		return false
	}
	for _, p := range neverReply {
		if strings.HasPrefix(subject, p) {
			return false
		}
	}
	for _, p := range prefixes {
		if p != "" && strings.HasPrefix(subject, p) && len(subject) > len(p) {
			return true
		}
	}
	return false
}
