package sanitize

// Skeleton returns the skeleton of s (see fold.go) for tests that check
// outputs the way a reader would see them.
func Skeleton(s string) string {
	f := folder{keep: true}
	f.fold(s)
	return string(f.out)
}

// HasMarker exposes the marker matcher.
func HasMarker(s string) bool { return hasMarker(s) }

// NoteFor exposes the annotation line for a list of pattern IDs.
func NoteFor(ids ...string) string {
	var s patternSet
	for _, id := range ids {
		s |= patternBit(id)
	}
	return noteFor(s)
}

// MediaNote exposes the note placed before an image, audio or blob.
func MediaNote(kind string, src Source) string { return mediaNote(kind, src) }

// MaskNonce exposes the nonce masking Wrap applies to content.
func MaskNonce(s, nonce string) string { return maskNonce(s, nonce) }
