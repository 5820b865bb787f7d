package api

// For api_test: the summary consolidation writes, from the episodes it
// reads (a test writes it as a crash would leave it).
var (
	SummaryOf = summaryOf
	EpisodeOf = episodeOf
)
