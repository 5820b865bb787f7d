// Package llmsummary rewrites summaries with an OpenAI-compatible chat
// completions endpoint. It runs beside a session actor, never inside its
// Receive: until a rewrite is decided and stored, the deterministic
// extractive summary stays in place, so a failed or slow endpoint costs
// quality, never the budget or availability.
package llmsummary

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/oaiconfig"
)

// ErrEndpoint is returned when the endpoint fails or answers nothing usable.
var ErrEndpoint = errors.New("llmsummary: endpoint failed")

// Config addresses the endpoint.
type Config struct {
	// BaseURL is e.g. http://127.0.0.1:8000/v1 (the path /chat/completions is added).
	BaseURL string
	APIKey  string
	Model   string
	Timeout time.Duration
	// MaxResponseBytes bounds the body read from the endpoint.
	MaxResponseBytes int64
}

// DefaultConfig returns a config with timeouts set; BaseURL and Model are the caller's.
func DefaultConfig() Config {
	return Config{Timeout: 10 * time.Second, MaxResponseBytes: 1 << 20}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	return oaiconfig.Validate("llmsummary", c.BaseURL, c.Model, c.Timeout, c.MaxResponseBytes)
}

// Client calls the endpoint.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, http: &http.Client{Timeout: cfg.Timeout}}, nil
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	Temperature float64       `json:"temperature"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
}

const instruction = "Summarize the conversation excerpt for an assistant's memory. Keep the user's questions, decisions, numbers and names. Be brief."

// Rewrite asks the endpoint for a summary of text in at most maxTokens tokens.
func (c *Client) Rewrite(ctx context.Context, text string, maxTokens int) (string, error) {
	return c.Chat(ctx, instruction, text, maxTokens)
}

// Chat sends one system and one user message and returns the answer (at
// most maxTokens tokens; 0 = the endpoint's default), at temperature 0.
func (c *Client) Chat(ctx context.Context, system, user string, maxTokens int) (string, error) {
	body, err := json.Marshal(chatRequest{
		Model:     c.cfg.Model,
		Messages:  []chatMessage{{Role: "system", Content: system}, {Role: "user", Content: user}},
		MaxTokens: maxTokens,
	})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.cfg.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrEndpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes))
	if err != nil {
		return "", fmt.Errorf("%w: read: %v", ErrEndpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: status %d: %.200s", ErrEndpoint, resp.StatusCode, data)
	}
	var out chatResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("%w: decode: %v", ErrEndpoint, err)
	}
	if len(out.Choices) == 0 || strings.TrimSpace(out.Choices[0].Message.Content) == "" {
		return "", fmt.Errorf("%w: empty completion", ErrEndpoint)
	}
	return strings.TrimSpace(out.Choices[0].Message.Content), nil
}
