package actors

import (
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

const tempPrefix = "temp:"

// stateOp reads or writes one state key. "temp:" keys live in the actor for
// the current turn only and are never persisted; "session:" keys are events.
func (a *sessionActor) stateOp(req *memoryv1.StateRequest) (proto.Message, error) {
	if !a.st().Exists() {
		return nil, notFound()
	}
	op := req.GetOp()
	if op != memoryv1.StateOp_STATE_OP_LIST {
		if err := segmented.ValidateStateKey(req.GetKey()); err != nil {
			return nil, err
		}
	}
	a.clearTempOnNewTurn()
	temp := strings.HasPrefix(req.GetKey(), tempPrefix)
	reply := &memoryv1.StateReply{Key: req.GetKey()}
	switch op {
	case memoryv1.StateOp_STATE_OP_GET:
		if temp {
			reply.Value, reply.Found = a.temp[req.GetKey()]
		} else {
			reply.Value, reply.Found = a.st().StateValue(req.GetKey())
		}
	case memoryv1.StateOp_STATE_OP_LIST:
		reply.Entries = append(reply.Entries, a.st().StateEntries()...)
		for k, v := range a.temp {
			reply.Entries = append(reply.Entries, &memoryv1.StateEntry{Key: k, Value: v})
		}
		sort.Slice(reply.Entries, func(i, j int) bool { return reply.Entries[i].GetKey() < reply.Entries[j].GetKey() })
	case memoryv1.StateOp_STATE_OP_SET, memoryv1.StateOp_STATE_OP_DELETE:
		if temp {
			// "session:" keys are checked by their Decide; temp keys by the same rule.
			if err := a.st().CheckMutable("change state"); err != nil {
				return nil, err
			}
			if op == memoryv1.StateOp_STATE_OP_SET {
				a.temp[req.GetKey()] = append([]byte(nil), req.GetValue()...)
			} else {
				delete(a.temp, req.GetKey())
			}
			reply.Result = &memoryv1.MutationReply{Version: a.st().Version(), Seq: a.st().LastSeq()}
			return reply, nil
		}
		res, err := a.mutate(req.GetCommandId(), func() ([]proto.Message, error) {
			if op == memoryv1.StateOp_STATE_OP_SET {
				return a.st().DecideStateSet(req.GetKey(), req.GetValue())
			}
			return a.st().DecideStateDelete(req.GetKey())
		})
		if err != nil {
			return nil, err
		}
		reply.Result = res
	default:
		return nil, &segmented.Rejection{Code: 400, Field: "op", Reason: "must be GET, SET, DELETE or LIST"}
	}
	return reply, nil
}

// clearTempOnNewTurn drops temp keys once the session moved to a new turn.
func (a *sessionActor) clearTempOnNewTurn() {
	if t := a.st().Turn(); t != a.tempTurn {
		clear(a.temp)
		a.tempTurn = t
	}
}
