// Package embed calls an OpenAI-compatible embeddings endpoint
// (POST <base>/embeddings, as served by OpenAI, vLLM, llama.cpp, Ollama,
// text-embeddings-inference…). It is optional: with no endpoint configured
// nothing is called and nothing is downloaded, and search ranks by BM25
// alone. It never runs inside a bbolt transaction or an actor's Receive:
// the projection's vector indexer calls it beside the projector, and the
// node calls it for a query before reading the projection.
//
// Vectors are returned normalized to unit length, so a dot product is a
// cosine similarity.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/oaiconfig"
	"github.com/agentmem/agentmem/internal/utf8cut"
)

// ErrEndpoint is returned when the endpoint fails or answers something
// unusable (wrong count, mixed or wrong dimensions, NaN, a zero vector).
var ErrEndpoint = errors.New("embed: endpoint failed")

// Config addresses the endpoint.
type Config struct {
	// BaseURL is e.g. http://127.0.0.1:8000/v1 (the path /embeddings is
	// added). Empty: no embeddings.
	BaseURL string
	APIKey  string
	Model   string
	// Dimensions, when > 0, is sent as "dimensions" (models that can
	// shorten their vectors) and checked on every answer.
	Dimensions int
	// Timeout bounds one request.
	Timeout time.Duration
	// BatchSize is the most texts sent in one request.
	BatchSize int
	// MaxInputBytes: longer texts are cut (at a UTF-8 boundary) before
	// they are sent; endpoints refuse inputs above their context.
	MaxInputBytes int
	// MaxResponseBytes bounds the body read from the endpoint.
	MaxResponseBytes int64
}

// DefaultConfig returns the limits; BaseURL and Model are the caller's.
func DefaultConfig() Config {
	return Config{Timeout: 10 * time.Second, BatchSize: 64, MaxInputBytes: 8 << 10, MaxResponseBytes: 64 << 20}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if err := oaiconfig.Validate("embed", c.BaseURL, c.Model, c.Timeout, c.MaxResponseBytes); err != nil {
		return err
	}
	switch {
	case c.Dimensions < 0 || c.Dimensions > 1<<16:
		return fmt.Errorf("embed: dimensions must be 0..65536, got %d", c.Dimensions)
	case c.BatchSize < 1 || c.BatchSize > 2048:
		return fmt.Errorf("embed: batch_size must be 1..2048, got %d", c.BatchSize)
	case c.MaxInputBytes < 1:
		return errors.New("embed: max_input_bytes must be > 0")
	}
	return nil
}

// Client calls the endpoint. It is safe for concurrent use.
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

// Model is the configured model name; vectors of different models are not
// comparable.
func (c *Client) Model() string { return c.cfg.Model }

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type response struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one unit vector per text, in order, in requests of at most
// BatchSize texts. All vectors have the same dimension. An error wrapping
// ErrEndpoint (or ctx's error) means no vector is returned; a timeout
// says nothing about the endpoint's health.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.cfg.BatchSize {
		batch := texts[start:min(start+c.cfg.BatchSize, len(texts))]
		vecs, err := c.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(vecs[0]) != len(out[0]) {
			return nil, fmt.Errorf("%w: dimension changed from %d to %d", ErrEndpoint, len(out[0]), len(vecs[0]))
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (c *Client) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = utf8cut.Prefix(t, c.cfg.MaxInputBytes)
		if strings.TrimSpace(in[i]) == "" {
			in[i] = " " // some servers refuse an empty input
		}
	}
	body, err := json.Marshal(request{Model: c.cfg.Model, Input: in, EncodingFormat: "float", Dimensions: c.cfg.Dimensions})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.cfg.BaseURL, "/")+"/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %v", ErrEndpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("%w: read: %v", ErrEndpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: status %d: %.200s", ErrEndpoint, resp.StatusCode, data)
	}
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: decode: %v", ErrEndpoint, err)
	}
	if len(r.Data) != len(texts) {
		return nil, fmt.Errorf("%w: %d embeddings for %d inputs", ErrEndpoint, len(r.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("%w: bad or repeated index %d", ErrEndpoint, d.Index)
		}
		v, err := Normalize(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("%w: input %d: %v", ErrEndpoint, d.Index, err)
		}
		out[d.Index] = v
	}
	dim := len(out[0])
	for i, v := range out {
		if len(v) != dim {
			return nil, fmt.Errorf("%w: input %d has dimension %d, input 0 %d", ErrEndpoint, i, len(v), dim)
		}
	}
	if c.cfg.Dimensions > 0 && dim != c.cfg.Dimensions {
		return nil, fmt.Errorf("%w: dimension %d, configured %d", ErrEndpoint, dim, c.cfg.Dimensions)
	}
	return out, nil
}

// Normalize returns v as float32 scaled to unit length. It fails on an
// empty vector, a non-finite component or a zero vector.
func Normalize(v []float64) ([]float32, error) {
	if len(v) == 0 {
		return nil, errors.New("empty vector")
	}
	var sum float64
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errors.New("non-finite component")
		}
		sum += x * x
	}
	if sum == 0 || math.IsInf(sum, 0) {
		return nil, errors.New("zero or overflowing vector")
	}
	n := math.Sqrt(sum)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x / n)
	}
	return out, nil
}
