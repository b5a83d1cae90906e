package policy

// Len returns the number of buckets l holds, for tests of the sweep.
func (l *Limiter) Len() int {
	n := 0
	l.buckets.Range(func(any, any) bool { n++; return true })
	return n
}
