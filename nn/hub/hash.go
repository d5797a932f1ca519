package hub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"regexp"
)

var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// hasher computes the hash the Hub names a file by: sha256 of the content for LFS files, the git
// blob SHA-1 (of "blob <size>\x00" and the content) for the others.
type hasher struct {
	hash.Hash
	kind string
	size int64
}

func newHasher(etag string, size int64) *hasher {
	h := &hasher{kind: "git blob SHA-1", size: size}
	if sha256Pattern.MatchString(etag) {
		h.kind = "sha256"
	}
	h.reset()
	return h
}

func (h *hasher) reset() {
	if h.kind == "sha256" {
		h.Hash = sha256.New()
		return
	}
	h.Hash = sha1.New()
	fmt.Fprintf(h.Hash, "blob %d\x00", h.size)
}

func (h *hasher) sum() string { return hex.EncodeToString(h.Sum(nil)) }
