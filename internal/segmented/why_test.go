package segmented

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// TestAssembledRecordsWhy: the ContextAssembled of a user message records,
// beside the sections, each chosen item's score and rank, the room and the
// caps, and the best candidates left out with their score and reason (no
// room, or a score of 0), at most MaxLeftOut per section, by reference
// only: a left-out memory entry by the SHA-256 of its key, no text of any
// candidate.
func TestAssembledRecordsWhy(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 4500, ReservedOutputTokens: 500,
		Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, MemoryPct: 10}})
	var c Candidates
	for i := range 20 {
		c.Memory = append(c.Memory, &memoryv1.MemoryItem{Scope: "user:u1", Key: fmt.Sprintf("secret-key-%d", i), Version: 1, Tier: TierUser,
			Text: strings.TrimSpace(strings.Repeat(fmt.Sprintf("value%d ", i), 30))})
		c.MemoryScores = append(c.MemoryScores, float64(20-i))
	}
	ev := assembledEvent(appendWith(t, s, &c, user("What do you remember?")))
	if ev == nil {
		t.Fatal("no ContextAssembled")
	}
	w := ev.GetSections().GetWhy()
	mem := ev.GetSections().GetMemory()
	if w == nil || len(mem) == 0 || len(w.GetMemoryScores()) != len(mem) || len(w.GetMemoryRanks()) != len(mem) {
		t.Fatalf("why %v for %d memory items: want a score and a rank beside each", w, len(mem))
	}
	if w.GetMemoryCap() != 400 || w.GetRoom() == 0 || w.GetMemoryCandidates() != 20 {
		t.Fatalf("why: cap %d room %d candidates %d, want cap 400 (10 %% of 4000), room > 0, 20 candidates", w.GetMemoryCap(), w.GetRoom(), w.GetMemoryCandidates())
	}
	if w.GetMemoryRanks()[0] != 1 || w.GetMemoryScores()[0] != float32(memoryWeight) {
		t.Errorf("the best candidate: rank %d score %v, want rank 1, score %v", w.GetMemoryRanks()[0], w.GetMemoryScores()[0], memoryWeight)
	}
	left := w.GetLeftOut()
	if len(left) != MaxLeftOut {
		t.Fatalf("%d left out recorded, want the best %d of %d", len(left), MaxLeftOut, 20-len(mem))
	}
	prev := uint32(0)
	for _, lo := range left {
		if lo.GetSection() != LayerMemory || lo.GetReason() != memoryv1.LeftOutReason_LEFT_OUT_REASON_NO_ROOM || lo.GetScore() <= 0 || lo.GetRank() <= prev {
			t.Errorf("left out %v: want memory, no room, a score, ranks ascending", lo)
		}
		prev = lo.GetRank()
		found := false
		for _, m := range c.Memory {
			if sum := sha256.Sum256([]byte(m.GetKey())); bytes.Equal(sum[:], lo.GetKeySha256()) {
				found = true
			}
		}
		if !found {
			t.Errorf("left out %v: its key digest names no candidate", lo)
		}
	}
	b, err := proto.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Memory {
		if bytes.Contains(b, []byte(m.GetKey())) || bytes.Contains(b, []byte("value")) {
			t.Fatalf("the why holds a key or a text of %s", m.GetKey())
		}
	}
}

// TestAssembledWhyOfRecall: a recall candidate of score 0 is left out
// below the threshold, named by its seq and message id; a chosen one has
// its score and rank.
func TestAssembledWhyOfRecall(t *testing.T) {
	s, planted := plantedSession(t, 1000, 60)
	filler := &memoryv1.Message{Id: fmt.Sprintf("m%d", planted.Seq+1), Seq: planted.Seq + 1, Role: memoryv1.Role_ROLE_USER,
		Content: "Filler question 0 about the weather and lunch plans for the team outing?", Turn: 2, CreatedUnixNano: planted.CreatedUnixNano}
	c := &Candidates{Recall: []*memoryv1.Message{planted, filler}, RecallScores: []float64{3, 0}}
	ev := assembledEvent(appendWith(t, s, c, user("Who owns the staging database password?")))
	w := ev.GetSections().GetWhy()
	if len(ev.GetSections().GetRecalled()) != 1 || len(w.GetRecalledScores()) != 1 || w.GetRecalledRanks()[0] != 1 || w.GetRecalledScores()[0] <= 0 {
		t.Fatalf("recalled %v why %v: want the planted message with rank 1 and its score", ev.GetSections().GetRecalled(), w)
	}
	left := w.GetLeftOut()
	if len(left) != 1 || left[0].GetSeq() != filler.Seq || left[0].GetMessageId() != filler.Id || left[0].GetScore() != 0 ||
		left[0].GetReason() != memoryv1.LeftOutReason_LEFT_OUT_REASON_BELOW_THRESHOLD || left[0].GetRank() != 2 || w.GetRecalledCandidates() != 2 {
		t.Fatalf("left out %v (of %d candidates): want the filler, score 0, below the threshold, rank 2 of 2", left, w.GetRecalledCandidates())
	}
}
