package membench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The LoCoMo format (Maharana et al., "Evaluating Very Long-Term
// Conversational Memory of LLM Agents", ACL 2024): one JSON object per
// conversation file with
//
//   - speaker_a, speaker_b: the two people's names (speaker_a plays the
//     user here);
//   - session_N: the turns of sitting N, each {speaker, dia_id, text,
//     blip_caption?} (a shared image is described by its caption);
//   - session_N_date_time: when sitting N began, "1:56 pm on 8 May, 2023"
//     (the files list dates of sittings they hold no turns for: those are
//     skipped);
//   - events_session_N: each speaker's events of sitting N;
//   - qa: questions {question, answer, evidence: [dia_id…], category}, the
//     category 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
//     5 adversarial (no answer in the conversation: left out). An evidence
//     entry may hold several ids separated by ";".
//
// Nothing of the data set is in this repository: LoadLoCoMo reads a
// directory the caller names (cmd/membench -locomo DIR).

// LoCoMo question categories, by their number in the data set.
var locomoCategories = map[int]string{1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

// LoCoMoCategories are the categories LoadLoCoMo keeps, in report order.
var LoCoMoCategories = []string{"single-hop", "multi-hop", "temporal", "open-domain"}

// ErrLoCoMo is returned (wrapped) when a LoCoMo file does not hold what the
// format says.
var ErrLoCoMo = errors.New("membench: locomo")

// locomoDate is the layout of session_N_date_time.
const locomoDate = "3:04 pm on 2 January, 2006"

var locomoSession = regexp.MustCompile(`^session_([0-9]+)$`)

// LoadLoCoMo reads every *.json file of dir (in name order) as one LoCoMo
// conversation. Questions of category 5 are left out, and so are evidence
// ids that name no turn (a question left without evidence is dropped:
// dropped counts them).
func LoadLoCoMo(dir string) (ds []*Dialogue, dropped int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, 0, err
	}
	if len(files) == 0 {
		return nil, 0, fmt.Errorf("%w: no *.json file in %s", ErrLoCoMo, dir)
	}
	slices.Sort(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, 0, err
		}
		d, n, err := ParseLoCoMo(strings.TrimSuffix(filepath.Base(f), ".json"), b)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", f, err)
		}
		ds = append(ds, d)
		dropped += n
	}
	return ds, dropped, nil
}

type locomoTurn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
}

type locomoQA struct {
	Question string          `json:"question"`
	Answer   json.RawMessage `json:"answer"`
	Evidence []string        `json:"evidence"`
	Category int             `json:"category"`
}

// ParseLoCoMo reads one LoCoMo conversation; dropped counts the questions
// left out for want of evidence.
func ParseLoCoMo(name string, data []byte) (*Dialogue, int, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrLoCoMo, err)
	}
	d := &Dialogue{Name: name}
	for i, k := range []string{"speaker_a", "speaker_b"} {
		if err := json.Unmarshal(raw[k], &d.Speakers[i]); err != nil || d.Speakers[i] == "" {
			return nil, 0, fmt.Errorf("%w: %s missing", ErrLoCoMo, k)
		}
	}
	var sessions []int
	for k := range raw {
		if m := locomoSession.FindStringSubmatch(k); m != nil {
			n, _ := strconv.Atoi(m[1])
			sessions = append(sessions, n)
		}
	}
	slices.Sort(sessions)
	for _, n := range sessions {
		var turns []locomoTurn
		if err := json.Unmarshal(raw[fmt.Sprintf("session_%d", n)], &turns); err != nil {
			return nil, 0, fmt.Errorf("%w: session_%d: %v", ErrLoCoMo, n, err)
		}
		if len(turns) == 0 {
			continue
		}
		var when string
		if err := json.Unmarshal(raw[fmt.Sprintf("session_%d_date_time", n)], &when); err != nil {
			return nil, 0, fmt.Errorf("%w: session_%d_date_time: %v", ErrLoCoMo, n, err)
		}
		at, err := time.Parse(locomoDate, strings.Join(strings.Fields(when), " "))
		if err != nil {
			return nil, 0, fmt.Errorf("%w: session_%d_date_time %q: %v", ErrLoCoMo, n, when, err)
		}
		s := DialogueSitting{UnixNano: at.UnixNano()}
		for _, t := range turns {
			sp := slices.Index(d.Speakers[:], t.Speaker)
			if sp < 0 {
				return nil, 0, fmt.Errorf("%w: %s: speaker %q is neither speaker_a nor speaker_b", ErrLoCoMo, t.DiaID, t.Speaker)
			}
			text := strings.TrimSpace(t.Text)
			if c := strings.TrimSpace(t.BlipCaption); c != "" {
				text += " [shares " + c + "]"
			}
			s.Turns = append(s.Turns, DialogueTurn{ID: t.DiaID, Speaker: sp, Text: text})
		}
		if ev, ok := raw[fmt.Sprintf("events_session_%d", n)]; ok {
			var events map[string]json.RawMessage
			if err := json.Unmarshal(ev, &events); err == nil {
				for i, sp := range d.Speakers {
					_ = json.Unmarshal(events[sp], &s.Events[i]) // "date" and odd shapes are not events
				}
			}
		}
		d.Sittings = append(d.Sittings, s)
	}
	ix := d.index()
	var qas []locomoQA
	if err := json.Unmarshal(raw["qa"], &qas); err != nil {
		return nil, 0, fmt.Errorf("%w: qa: %v", ErrLoCoMo, err)
	}
	dropped := 0
	for _, qa := range qas {
		cat, ok := locomoCategories[qa.Category]
		if !ok {
			continue // 5: adversarial, no answer in the conversation
		}
		q := DialogueQuestion{Text: qa.Question, Answer: rawAnswer(qa.Answer), Category: cat}
		for _, e := range qa.Evidence {
			for _, id := range strings.Split(e, ";") {
				id = strings.TrimSpace(id)
				if _, ok := ix[id]; ok && !slices.Contains(q.Evidence, id) {
					q.Evidence = append(q.Evidence, id)
				}
			}
		}
		if len(q.Evidence) == 0 {
			dropped++
			continue
		}
		d.Questions = append(d.Questions, q)
	}
	if err := d.Validate(); err != nil {
		return nil, 0, err
	}
	return d, dropped, nil
}

// rawAnswer is a JSON answer (a string, or a number) as text.
func rawAnswer(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(r))
}
