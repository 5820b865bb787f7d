package placement

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// Partition is the partition of aggregate id among n.
func Partition(id string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// score is node's rendezvous weight for partition p.
func score(node string, p int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(node))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(strconv.AppendInt(nil, int64(p), 10))
	return mix(h.Sum64())
}

// mix spreads FNV's low-entropy high bits (splitmix64's finalizer).
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// desired is the node that should own partition p among live (rendezvous
// hashing: the highest score; ties to the smaller id). "" when live is empty.
func desired(p int, live []string) string {
	var best string
	var bestScore uint64
	for _, n := range live {
		s := score(n, p)
		if best == "" || s > bestScore || (s == bestScore && n < best) {
			best, bestScore = n, s
		}
	}
	return best
}

func partitionKey(p int) string { return "p." + strconv.Itoa(p) }

func nodeKey(id string) string { return "n." + id }

// parseKey reads a key of the bucket: partitionKey(p) gives p and "",
// nodeKey(id) gives −1 and id, any other key −1 and "".
func parseKey(k string) (p int, node string) {
	switch {
	case strings.HasPrefix(k, "p."):
		if p, err := strconv.Atoi(k[2:]); err == nil && p >= 0 {
			return p, ""
		}
	case strings.HasPrefix(k, "n."):
		return -1, k[2:]
	}
	return -1, ""
}
