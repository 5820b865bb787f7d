package replay

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressLineEvery is how often the plain (non-terminal) progress prints.
const progressLineEvery = time.Second

// progress reports a rebuild: a progress bar on a terminal, otherwise one
// line about every second. Both show events/s and the time left. It is
// called from the rebuild's goroutine only.
type progress struct {
	w    io.Writer // nil: silent
	tty  bool
	what string
	now  func() time.Time // injected by tests

	bar          *progressbar.ProgressBar
	start, last  time.Time
	applied, tot uint64
}

// newProgress starts the clock of a rebuild; now is the clock (time.Now).
func newProgress(w io.Writer, tty bool, what string, now func() time.Time) *progress {
	t := now()
	return &progress{w: w, tty: tty, what: what, now: now, start: t, last: t}
}

// update is the callback given to projections.Rebuild.
func (p *progress) update(applied, total uint64) {
	if p.w == nil {
		return
	}
	now := p.now()
	p.applied, p.tot = applied, max(total, applied)
	if p.tty {
		if p.bar == nil {
			// A known maximum: an unknown one makes the bar start a spinner goroutine.
			p.bar = progressbar.NewOptions64(int64(p.tot),
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription(p.what),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("events"),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetSpinnerChangeInterval(0),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
			)
		}
		if int64(p.tot) != p.bar.GetMax64() {
			p.bar.ChangeMax64(int64(p.tot))
		}
		_ = p.bar.Set64(int64(applied))
		return
	}
	if now.Sub(p.last) >= progressLineEvery {
		p.last = now
		fmt.Fprintln(p.w, p.line(now))
	}
}

// line is the plain progress line.
func (p *progress) line(now time.Time) string {
	el := now.Sub(p.start)
	rate := 0.0
	if el > 0 {
		rate = float64(p.applied) / el.Seconds()
	}
	eta := "?"
	if rate > 0 && p.tot >= p.applied {
		eta = (time.Duration(float64(p.tot-p.applied)/rate*float64(time.Second)) + time.Second/2).Truncate(time.Second).String()
	}
	pct := 100.0
	if p.tot > 0 {
		pct = float64(p.applied) * 100 / float64(p.tot)
	}
	return fmt.Sprintf("%s: %d/%d events (%.0f%%), %.0f events/s, ETA %s", p.what, p.applied, p.tot, pct, rate, eta)
}

// finish ends the bar (the summary follows on stdout).
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
