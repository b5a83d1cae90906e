package proxy

// The goroutines of parked calls (mrtr.go): one that ran a call waits for
// the next, so its stack is not grown again.

// maxIdleRunners bounds the goroutines kept waiting for the next call.
const maxIdleRunners = 16

// run runs f on an idle runner, or on a new one.
func (pc *parkedCalls) run(f func()) {
	select {
	case pc.jobs <- f:
	default:
		pc.wg.Go(func() { pc.runner(f) })
	}
}

// runner runs f, then the calls handed to it while it waits, until more
// than maxIdleRunners wait or the parkedCalls close. A goroutine that stays
// keeps the stack its last call grew: on a fresh one, a forwarded call
// grows and copies its stack every time.
func (pc *parkedCalls) runner(f func()) {
	for {
		f()
		if pc.idle.Add(1) > maxIdleRunners {
			pc.idle.Add(-1)
			return
		}
		select {
		case f = <-pc.jobs:
			pc.idle.Add(-1)
		case <-pc.done.Done():
			pc.idle.Add(-1)
			return
		}
	}
}
