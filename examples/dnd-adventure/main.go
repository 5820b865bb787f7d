// Command dnd-adventure runs a small role-playing party against an
// in-process agentmem node: five player agents and a dungeon master, each
// with its own NATS connection and agent id. Every player keeps a private
// character sheet under the same key, character_sheet, in its own agent
// scope; the party shares a workflow scope (the DM's quest, a log the
// players append to with compare-and-set retries).
//
// It prints each agent's view and exits 0 only if no agent can see another
// agent's sheet through get, list, history or search; 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

const (
	sheetKey = "character_sheet"
	partyID  = "party-of-the-lantern"
	logKey   = "log"
	questKey = "quest"
	dmID     = "dungeon-master"
)

type player struct {
	id, name, class string
	hp              int
}

var players = []player{
	{"player-aria", "Aria", "ranger", 24},
	{"player-borin", "Borin", "cleric", 30},
	{"player-cyra", "Cyra", "wizard", 16},
	{"player-dax", "Dax", "rogue", 20},
	{"player-elowen", "Elowen", "paladin", 34},
}

func sheet(p player, hp int, note string) string {
	return fmt.Sprintf("name: %s\nclass: %s\nhp: %d\nsecret: %s", p.name, p.class, hp, note)
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dnd-adventure:", err)
		os.Exit(1)
	}
}

// agent is one participant: its own connection, client and agent scope.
type agent struct {
	id string
	nc *nats.Conn
	c  *client.Client
}

func (a *agent) scope() client.Scope { return client.Agent(a.id) }

// run starts a node in a temporary directory, plays the adventure, prints
// every agent's view and returns an error if any agent sees another's sheet.
func run(ctx context.Context, out io.Writer) (err error) {
	dir, err := os.MkdirTemp("", "dnd-adventure-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := node.DefaultConfig()
	cfg.DataDir = dir
	cfg.NATSListen = "127.0.0.1:-1" // a random free port
	cfg.HTTPAddr = ""
	n, err := node.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = errors.Join(err, n.Shutdown(sctx))
	}()
	connect := func(id string) (*agent, error) {
		nc, err := nats.Connect(n.ClientURL(), nats.Name(id))
		if err != nil {
			return nil, fmt.Errorf("%s: connect: %w", id, err)
		}
		return &agent{id: id, nc: nc, c: client.New(nc)}, nil
	}
	dm, err := connect(dmID)
	if err != nil {
		return err
	}
	defer dm.nc.Close()
	party := client.Workflow(partyID)
	agents := make([]*agent, len(players))
	for i, p := range players {
		if agents[i], err = connect(p.id); err != nil {
			return err
		}
		defer agents[i].nc.Close()
	}

	// The DM sets the quest; players write their sheets (same key, each
	// in its own scope).
	if _, err := dm.c.Put(ctx, party, &memoryv1.PutEntryRequest{
		Key: questKey, Value: []byte("Recover the Lantern of Dawn from the Sunken Crypt."), By: dmID,
		ExpectedVersion: ptr(int64(0)),
	}); err != nil {
		return fmt.Errorf("dm: quest: %w", err)
	}
	for i, p := range players {
		if _, err := agents[i].c.Put(ctx, agents[i].scope(), &memoryv1.PutEntryRequest{
			Key: sheetKey, Value: []byte(sheet(p, p.hp, "fears deep water")), ContentType: "text/plain",
		}); err != nil {
			return fmt.Errorf("%s: sheet: %w", p.id, err)
		}
	}

	// All players act at once: each appends to the party log with
	// compare-and-set (retrying on 409), then updates its own sheet.
	var wg sync.WaitGroup
	errs := make([]error, len(players))
	retries := make([]int, len(players))
	for i, p := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := agents[i]
			line := fmt.Sprintf("%s the %s enters the crypt", p.name, p.class)
			if retries[i], errs[i] = appendLog(ctx, a, party, line); errs[i] != nil {
				return
			}
			hp := p.hp - 3*(i+1)
			_, errs[i] = a.c.Put(ctx, a.scope(), &memoryv1.PutEntryRequest{
				Key: sheetKey, Value: []byte(sheet(p, hp, "fears deep water; found a silver key")), ExpectedVersion: ptr(int64(1)),
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if _, err := appendLog(ctx, dm, party, "DM: the crypt door slams shut behind the party"); err != nil {
		return err
	}

	// Each agent's view, and the privacy check through every read.
	var leaks []string
	for i, p := range players {
		a := agents[i]
		view, found, err := agentView(ctx, a, p, party)
		if err != nil {
			return fmt.Errorf("%s: %w", p.id, err)
		}
		fmt.Fprintf(out, "=== %s (%s), %d CAS retries on the log\n%s\n", p.name, p.id, retries[i], view)
		for _, f := range found {
			leaks = append(leaks, p.id+" sees "+f)
		}
	}
	// The DM has no sheet of its own and must see none of the players'.
	view, found, err := agentView(ctx, dm, player{id: dmID, name: "DM"}, party)
	if err != nil {
		return fmt.Errorf("%s: %w", dmID, err)
	}
	fmt.Fprintf(out, "=== Dungeon master (%s)\n%s\n", dmID, view)
	for _, f := range found {
		leaks = append(leaks, dmID+" sees "+f)
	}
	if len(leaks) > 0 {
		return fmt.Errorf("privacy violated:\n  %s", strings.Join(leaks, "\n  "))
	}
	fmt.Fprintf(out, "OK: %d agents, no agent sees another's %s (checked with get, list, history and search)\n", len(players)+1, sheetKey)
	return nil
}

// appendLog appends line to the party log with compare-and-set, retrying
// when another writer got there first. It returns the number of retries.
func appendLog(ctx context.Context, a *agent, party client.Scope, line string) (int, error) {
	for retries := 0; retries < 100; retries++ {
		var cur []byte
		expected := int64(0)
		e, err := a.c.GetEntry(ctx, party, logKey, 0)
		switch {
		case err == nil:
			cur, expected = e.GetValue(), int64(e.GetVersion())
		case client.Code(err) != 404:
			return retries, fmt.Errorf("%s: read the log: %w", a.id, err)
		}
		next := line
		if len(cur) > 0 {
			next = string(cur) + "\n" + line
		}
		_, err = a.c.Put(ctx, party, &memoryv1.PutEntryRequest{Key: logKey, Value: []byte(next), ExpectedVersion: &expected, By: a.id})
		if client.Code(err) == 409 {
			continue // someone appended meanwhile: read again
		}
		if err != nil {
			return retries, fmt.Errorf("%s: append to the log: %w", a.id, err)
		}
		return retries, nil
	}
	return 100, fmt.Errorf("%s: log append: too many conflicts", a.id)
}

// agentView reads what agent a sees: its own sheet and the party state. It
// returns the other players whose sheet showed up in any of a's reads.
func agentView(ctx context.Context, a *agent, self player, party client.Scope) (string, []string, error) {
	var b strings.Builder
	var found []string
	others := func(where string, value []byte) {
		for _, p := range players {
			if p.id != self.id && strings.Contains(string(value), "name: "+p.name+"\n") {
				found = append(found, fmt.Sprintf("%s's sheet via %s", p.name, where))
			}
		}
	}
	own := a.scope()
	e, err := a.c.GetEntry(ctx, own, sheetKey, 0)
	switch {
	case err == nil:
		others("get", e.GetValue())
		fmt.Fprintf(&b, "my %s (v%d):\n  %s\n", sheetKey, e.GetVersion(), strings.ReplaceAll(string(e.GetValue()), "\n", "\n  "))
	case client.Code(err) == 404 && self.class == "":
		fmt.Fprintf(&b, "my %s: none\n", sheetKey)
	default:
		return "", nil, fmt.Errorf("get own sheet: %w", err)
	}
	list, err := a.c.ListEntries(ctx, own, &memoryv1.ListEntriesRequest{IncludeDeleted: true})
	if err != nil {
		return "", nil, fmt.Errorf("list: %w", err)
	}
	for _, e := range list.GetEntries() {
		others("list", e.GetValue())
	}
	hist, err := a.c.History(ctx, own, sheetKey)
	if err != nil && !(client.Code(err) == 404 && self.class == "") {
		return "", nil, fmt.Errorf("history: %w", err)
	}
	for _, e := range hist {
		others(fmt.Sprintf("history v%d", e.GetVersion()), e.GetValue())
		if self.class != "" && e.GetUpdatedBy() != a.id {
			found = append(found, fmt.Sprintf("a version %d written by %q", e.GetVersion(), e.GetUpdatedBy()))
		}
	}
	for _, p := range players {
		res, err := a.c.SearchEntries(ctx, own, &memoryv1.SearchEntriesRequest{Query: p.name + " " + p.class})
		if err != nil {
			return "", nil, fmt.Errorf("search: %w", err)
		}
		for _, h := range res.GetHits() {
			others("search for "+p.name, h.GetEntry().GetValue())
		}
	}
	quest, err := a.c.GetEntry(ctx, party, questKey, 0)
	if err != nil {
		return "", nil, fmt.Errorf("party quest: %w", err)
	}
	plog, err := a.c.GetEntry(ctx, party, logKey, 0)
	if err != nil {
		return "", nil, fmt.Errorf("party log: %w", err)
	}
	others("party quest", quest.GetValue())
	others("party log", plog.GetValue())
	fmt.Fprintf(&b, "party %s: %s\n", questKey, quest.GetValue())
	fmt.Fprintf(&b, "party %s (v%d):\n  %s\n", logKey, plog.GetVersion(), strings.ReplaceAll(string(plog.GetValue()), "\n", "\n  "))
	return b.String(), found, nil
}

func ptr[T any](v T) *T { return &v }
