// Command membench runs the memory-quality benchmark and prints its
// markdown tables (see package membench). `make bench-memory` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/internal/version"
	"github.com/agentmem/agentmem/membench"
)

func main() {
	cfg := membench.DefaultConfig()
	qcfg := membench.DefaultQuestionConfig()
	mode := flag.String("mode", "all", "tables to print: all, question (the question mode on LoCoMo-like conversations), extraction (consolidation into long-term memory) or classic (the convgen run)")
	flag.IntVar(&qcfg.Conversations, "conversations", qcfg.Conversations, "question mode: conversations generated (seeds -seed, -seed+1, …)")
	flag.IntVar(&qcfg.Dialog.Sittings, "dialog-sittings", qcfg.Dialog.Sittings, "question mode: sittings per conversation")
	flag.StringVar(&qcfg.Dialog.Pools, "pools", qcfg.Dialog.Pools, "question mode: the generator's word pools: \"\" (default) or holdout (other items and paraphrases, written apart from the search's lexicon)")
	flag.Uint64Var(&cfg.Conversation.Seed, "seed", cfg.Conversation.Seed, "generator seed")
	flag.IntVar(&cfg.Conversation.Sittings, "sittings", cfg.Conversation.Sittings, "sittings of the conversation")
	flag.IntVar(&cfg.Conversation.MessagesPerSitting, "messages", cfg.Conversation.MessagesPerSitting, "messages per sitting")
	flag.IntVar(&cfg.Conversation.QuestionsPerCheckpoint, "questions", cfg.Conversation.QuestionsPerCheckpoint, "questions per checkpoint (the end asks every fact)")
	budgets := flag.String("budgets", joinInts(cfg.Budgets), "context budgets in tokens, ascending")
	profiles := flag.String("profiles", strings.Join(cfg.Profiles, ","), "agentmem compression profiles, the default first")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println("agentmem-membench", version.Version)
		return
	}
	var err error
	if cfg.Budgets, err = parseInts(*budgets); err != nil {
		fail(err)
	}
	cfg.Profiles = strings.Split(*profiles, ",")
	qcfg.Dialog.Seed, qcfg.Budgets = cfg.Conversation.Seed, cfg.Budgets
	if *mode != "all" && *mode != "question" && *mode != "classic" && *mode != "extraction" {
		fail(fmt.Errorf("-mode %q: want all, question, extraction or classic", *mode))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *mode == "all" || *mode == "extraction" {
		llm, err := membench.NewLLMStandIn()
		if err != nil {
			fail(err)
		}
		rep, err := membench.RunExtraction(ctx, qcfg, []membench.Extractor{membench.Deterministic{}, llm})
		llm.Close()
		if err != nil {
			fail(err)
		}
		if err := rep.Markdown(os.Stdout); err != nil {
			fail(err)
		}
	}
	if *mode == "all" || *mode == "question" {
		rep, err := membench.RunQuestions(ctx, qcfg)
		if err != nil {
			fail(err)
		}
		if err := rep.Markdown(os.Stdout); err != nil {
			fail(err)
		}
	}
	if *mode == "all" || *mode == "classic" {
		rep, err := membench.Run(ctx, cfg)
		if err != nil {
			fail(err)
		}
		if err := rep.Markdown(os.Stdout); err != nil {
			fail(err)
		}
	}
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-budgets: %w", err)
		}
		out = append(out, n)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "membench:", err)
	os.Exit(1)
}
