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
	t := membench.Tables{Classic: membench.DefaultConfig(), Question: membench.DefaultQuestionConfig(), Cross: membench.DefaultCrossConfig(), Progress: os.Stderr}
	cfg, qcfg, xcfg := &t.Classic, &t.Question, &t.Cross
	flag.StringVar(&t.Mode, "mode", "all", "tables to print: all, cross (each sitting a session of one user, each question in a new session), question (a whole conversation in one session, then each question), extraction (consolidation into long-term memory) or classic (the convgen run)")
	sources := flag.String("sources", strings.Join(membench.Sources, ","), "conversations to run on, in this order: heldout (membench/heldout), heldout-fresh (membench/heldout/fresh, the second held-out set), heldout-third (membench/heldout/third, the third), heldout-long (membench/heldout/long, the fourth, of long conversations), locomo (needs -locomo), generator (internal/dialoggen and convgen)")
	flag.StringVar(&t.LoCoMo, "locomo", "", "a directory of LoCoMo conversation files (*.json): the cross-session and question modes run on them too")
	flag.IntVar(&qcfg.Conversations, "conversations", qcfg.Conversations, "question mode: conversations generated (seeds -seed, -seed+1, …)")
	flag.IntVar(&qcfg.Dialog.Sittings, "dialog-sittings", qcfg.Dialog.Sittings, "question mode: sittings per conversation")
	flag.BoolVar(&qcfg.ArchivedSummaries, "archived-summaries", false, "question mode: offer the agentmem sessions their archived L2 summaries (assembly.archived_summaries; off by default)")
	flag.StringVar(&qcfg.Dialog.Pools, "pools", qcfg.Dialog.Pools, "question mode: the generator's word pools: \"\" (default) or holdout (other items and paraphrases, written apart from the search's lexicon)")
	flag.Uint64Var(&cfg.Conversation.Seed, "seed", cfg.Conversation.Seed, "generator seed")
	flag.IntVar(&cfg.Conversation.Sittings, "sittings", cfg.Conversation.Sittings, "sittings of the conversation")
	flag.IntVar(&cfg.Conversation.MessagesPerSitting, "messages", cfg.Conversation.MessagesPerSitting, "messages per sitting")
	flag.IntVar(&cfg.Conversation.QuestionsPerCheckpoint, "questions", cfg.Conversation.QuestionsPerCheckpoint, "questions per checkpoint (the end asks every fact)")
	budgets := flag.String("budgets", joinInts(cfg.Budgets), "context budgets in tokens, ascending (classic and question modes)")
	crossBudgets := flag.String("cross-budgets", joinInts(xcfg.Budgets), "cross-session mode: the new sessions' budgets in tokens, ascending")
	flag.IntVar(&xcfg.MaxQuestions, "cross-questions", xcfg.MaxQuestions, "cross-session mode: questions asked per conversation (0: all)")
	flag.IntVar(&xcfg.Repeats, "cross-repeats", xcfg.Repeats, "cross-session mode: new sessions per question and budget (the contexts are compared)")
	profiles := flag.String("profiles", strings.Join(cfg.Profiles, ","), "agentmem compression profiles, the default first")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println("agentmem-membench", version.Version)
		return
	}
	var err error
	if cfg.Budgets, err = parseInts("-budgets", *budgets); err != nil {
		fail(err)
	}
	if xcfg.Budgets, err = parseInts("-cross-budgets", *crossBudgets); err != nil {
		fail(err)
	}
	cfg.Profiles = strings.Split(*profiles, ",")
	t.Sources = strings.Split(*sources, ",")
	qcfg.Dialog.Seed, qcfg.Budgets = cfg.Conversation.Seed, cfg.Budgets
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := t.Print(ctx, os.Stdout); err != nil {
		fail(err)
	}
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func parseInts(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "membench:", err)
	os.Exit(1)
}
