package mailauth

import (
	"context"
	"errors"

	"burner/storage"
)

// Job is one accepted message to verify.
type Job struct {
	// IDs name what the verdict belongs to, the stored copies of the
	// message: the pool does not read them, only hands them back.
	IDs      []string
	Envelope storage.Envelope
	// Raw is the message as received. The pool does not modify it, and
	// drops it once the verdict is made: Done receives the job with Raw
	// nil.
	Raw []byte
}

// Done receives the verdict of a submitted job, on one of the pool's
// goroutines. ctx is cancelled when Shutdown gives up waiting; a Done that
// stores the verdict should pass it on.
type Done func(ctx context.Context, j Job, r storage.AuthResult)

// Submit refusals. Neither is a fault: delivery goes on, and the verdict
// comes later (ErrBusy) or is left to whoever finds it pending.
var (
	// ErrBusy means the queue was full: the job was not verified, and
	// Done will receive its Degraded verdict, temperror "busy".
	ErrBusy = errors.New("mailauth: verification queue full")
	// ErrOverloaded means even the busy verdicts are waiting in numbers
	// (their Done cannot keep up), or the pool is shut down: Done will not
	// be called for this job.
	ErrOverloaded = errors.New("mailauth: cannot take the job")
)

// busyLane is the least number of busy verdicts that may wait for Done.
const busyLane = 1024

// verdict is a busy job and its verdict, on its way to Done.
type verdict struct {
	job Job
	r   storage.AuthResult
}

// start runs n workers and the goroutine that hands busy verdicts to Done.
func (v *Verifier) start(n int) {
	for range n {
		v.workers.Go(func() {
			for j := range v.queue {
				v.run(j)
			}
		})
	}
	v.workers.Go(func() {
		for b := range v.busy {
			if v.base.Err() == nil {
				v.done(v.base, b.job, b.r)
			}
		}
	})
}

// run verifies one job and hands its verdict to Done, unless Shutdown gave
// up meanwhile: a verdict cut short by that is not the message's, so the
// job is left pending.
func (v *Verifier) run(j Job) {
	if v.base.Err() != nil {
		return
	}
	var r storage.AuthResult
	func() {
		defer v.contain("verify", func() { r = v.Degraded(j.Envelope, nil, "internal error") })
		r = v.Verify(v.base, j.Envelope, j.Raw)
	}()
	v.metrics.jobs.WithLabelValues(jobVerified).Inc()
	if v.base.Err() != nil {
		return
	}
	j.Raw = nil
	v.done(v.base, j, r)
}

// Submit queues j for a worker and returns at once: nil when it is queued
// (Done will receive its verdict); ErrBusy when the queue is full (Done
// will receive its Degraded verdict, "busy", from another goroutine, so
// that the caller does not wait on Done either); ErrOverloaded when even
// that cannot wait, or after Shutdown.
func (v *Verifier) Submit(j Job) error {
	v.mu.RLock()
	if v.closed {
		v.mu.RUnlock()
		return ErrOverloaded
	}
	select {
	case v.queue <- j:
		v.mu.RUnlock()
		return nil
	default:
	}
	v.mu.RUnlock()

	r := v.Degraded(j.Envelope, j.Raw, "busy")
	j.Raw = nil
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.closed {
		return ErrOverloaded
	}
	select {
	case v.busy <- verdict{j, r}:
		v.metrics.jobs.WithLabelValues(jobBusy).Inc()
		return ErrBusy
	default:
		v.metrics.jobs.WithLabelValues(jobOverloaded).Inc()
		v.log.Warn("verification overloaded: verdict left pending", "ids", j.IDs)
		return ErrOverloaded
	}
}

// Queue submits the message stored as the emails ids, delivered with env
// (smtpd's Verifier): what Submit returns is counted in
// burner_auth_jobs_total, and never delays the 250.
func (v *Verifier) Queue(ids []string, env storage.Envelope, raw []byte) {
	v.Submit(Job{IDs: ids, Envelope: env, Raw: raw})
}

// Shutdown stops taking jobs and waits for the queued ones to be verified
// and handed to Done. If ctx ends first, it cancels the verifications in
// flight (their jobs, and those still queued, get no verdict: they stay
// pending), waits for the goroutines to return, and returns ctx's error.
// It may be called more than once.
func (v *Verifier) Shutdown(ctx context.Context) error {
	v.stopOnce.Do(func() {
		v.mu.Lock()
		v.closed = true
		close(v.queue)
		close(v.busy)
		v.mu.Unlock()
	})
	stopped := make(chan struct{})
	go func() {
		v.workers.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		v.cancel()
		return nil
	case <-ctx.Done():
		v.cancel()
		<-stopped
		return ctx.Err()
	}
}
