// Package oaiconfig checks the settings every OpenAI-compatible endpoint
// client of the project shares (internal/embed, internal/llmsummary).
package oaiconfig

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Validate reports the first invalid shared field: baseURL must be an
// http(s) URL, model non-empty, timeout and maxResponseBytes > 0. Messages
// start with pkg ("embed: base_url must be ...").
func Validate(pkg, baseURL, model string, timeout time.Duration, maxResponseBytes int64) error {
	switch {
	case !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://"):
		return fmt.Errorf("%s: base_url must be an http(s) URL, got %q", pkg, baseURL)
	case model == "":
		return errors.New(pkg + ": model is required")
	case timeout <= 0:
		return errors.New(pkg + ": timeout must be > 0")
	case maxResponseBytes <= 0:
		return errors.New(pkg + ": max_response_bytes must be > 0")
	}
	return nil
}
